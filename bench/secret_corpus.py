"""A generated corpus of fake secrets and look-alikes in real transcript files (issue 17 §2, §5).

Every value is drawn from a seeded `random.Random`, so the corpus is the same on every run and
no value is a real credential. Secrets come in 50+ kinds (vendor tokens, private keys,
passwords on command lines, connection strings, headers, .netrc ...) and are placed in 20+
contexts where Claude Code transcripts carry them: prompts, Bash commands and their (long,
trimmed) output, Read results with line numbers, Edit diffs, Write bodies, JSON / YAML / TOML /
.env / code files, sub-agent files, session titles, todos. Look-alikes (hashes, commit ids,
UUIDs, base64 images, versions, identifiers, placeholders, public keys) are placed where
ingest keeps their text whole, so any change is the redactor's.

`write_corpus` writes the transcripts (one session per few events, sub-agent files beside);
`scan_store` looks for every secret, and every distinctive 12-character fragment of one, in
the raw bytes of the database, its WAL and the FTS vocabulary, and checks that every
look-alike is still stored verbatim. Used by tests/test_secret_corpus.py (bounded) and
bench/redact.py (full).
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

FRAGMENT = 12  # a surviving run this long of a secret counts as a leak

_ALNUM = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits
_B64 = _ALNUM + "+/"
_B64URL = _ALNUM + "-_"
_HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Item:
    """One secret or look-alike: its kind, the exact value, the context it was placed in."""

    kind: str
    value: str
    context: str
    atoms: tuple[str, ...] = ()  # the distinctive parts to look for (default: the value)

    def parts(self) -> tuple[str, ...]:
        return self.atoms or (self.value,)


@dataclass
class Corpus:
    secrets: list[Item] = field(default_factory=list)
    lookalikes: list[Item] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


# ----------------------------------------------------------------------------------------
# Random values
# ----------------------------------------------------------------------------------------
class _Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def s(self, n: int, chars: str = _ALNUM) -> str:
        return "".join(self.r.choice(chars) for _ in range(n))

    def password(self, first: str = "") -> str:
        """A human-made-looking password with a digit and a symbol."""
        word = self.r.choice(["Tango", "orbit", "Maple", "velvet", "Quartz", "ember", "Nimbus"])
        sym = self.r.choice("!%^*-_+=~.")
        return first + word + self.s(3, string.digits) + sym + self.s(self.r.randint(5, 9))

    def pem_lines(self, lines: int, width: int = 64) -> list[str]:
        raw = bytes(self.r.randrange(256) for _ in range(lines * width * 3 // 4))
        b64 = base64.b64encode(raw).decode()
        return [b64[i : i + width] for i in range(0, len(b64), width)]

    def jwt(self) -> str:
        head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
        body = {"sub": self.s(10, _LOWER), "exp": self.r.randint(1_700_000_000, 1_900_000_000)}
        payload = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
        return f"{head}.{payload}.{self.s(43, _B64URL)}"


# Vendor tokens: kind -> value maker. Each has a shape a scanner knows without context.
_TOKENS: dict[str, Callable[[_Gen], str]] = {
    "github-classic": lambda g: "ghp_" + g.s(36),
    "github-oauth": lambda g: "gho_" + g.s(36),
    "github-fine-grained": lambda g: "github_pat_" + g.s(22) + "_" + g.s(59),
    "gitlab-pat": lambda g: "glpat-" + g.s(20, _ALNUM + "-_"),
    "slack-bot": lambda g: f"xoxb-{g.s(12, string.digits)}-{g.s(13, string.digits)}-{g.s(24)}",
    "slack-app": lambda g: f"xapp-1-A{g.s(10, string.ascii_uppercase + string.digits)}-{g.s(13, string.digits)}-{g.s(64, _HEX)}",
    "openai-project": lambda g: "sk-proj-" + g.s(48, _B64URL) + g.s(8),
    "anthropic": lambda g: "sk-ant-api03-" + g.s(93, _B64URL) + "-" + g.s(6) + "AA",
    "stripe-live": lambda g: "sk_live_" + g.s(24) + g.s(4, string.digits),
    "stripe-restricted": lambda g: "rk_live_" + g.s(30),
    "stripe-webhook": lambda g: "whsec_" + g.s(32),
    "google-api-key": lambda g: "AIza" + g.s(35, _B64URL),
    "google-oauth-secret": lambda g: "GOCSPX-" + g.s(28, _B64URL),
    "google-access-token": lambda g: "ya29." + g.s(120, _B64URL),
    "npm": lambda g: "npm_" + g.s(36),
    "docker-pat": lambda g: "dckr_pat_" + g.s(27, _B64URL),
    "huggingface": lambda g: "hf_" + g.s(34),
    "sendgrid": lambda g: f"SG.{g.s(22, _B64URL)}.{g.s(43, _B64URL)}",
    "pypi": lambda g: "pypi-AgEIcHlwaS5vcmc" + g.s(70, _B64URL),
    "age": lambda g: "AGE-SECRET-KEY-1" + g.s(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    "jwt": lambda g: g.jwt(),
    "aws-access-key": lambda g: "AKIA" + g.s(16, string.ascii_uppercase + "234567"),
    "vault-token": lambda g: "hvs." + g.s(90, _B64URL),
    "vault-legacy": lambda g: "s." + g.s(24),
    "shopify": lambda g: "shpat_" + g.s(32, _HEX),
    "linear": lambda g: "lin_api_" + g.s(40),
    "digitalocean": lambda g: "dop_v1_" + g.s(64, _HEX),
    "supabase": lambda g: "sbp_" + g.s(40, _HEX),
    "grafana": lambda g: "glsa_" + g.s(32) + "_" + g.s(8, _HEX),
    "postman": lambda g: f"PMAK-{g.s(24, _HEX)}-{g.s(34, _HEX)}",
    "newrelic": lambda g: "NRAK-" + g.s(27, string.ascii_uppercase + string.digits),
    "telegram-bot": lambda g: f"{g.r.randint(10**8, 10**10)}:AA{g.s(33, _B64URL)}",
    "databricks": lambda g: "dapi" + g.s(32, _HEX),
    "atlassian": lambda g: "ATATT3xFfGF0" + g.s(180, _B64URL) + "=" + g.s(8, _HEX.upper()),
    "sentry": lambda g: "sntrys_" + g.s(80, _B64URL),
}

# Tokens without a distinctive prefix, never bare in prose (documented limit).
_CONTEXT_ONLY = frozenset({"vault-legacy"})

# Names under which a random value is a secret (formats: .env, YAML, JSON, TOML, code).
_SECRET_NAMES = ("DB_PASSWORD", "API_KEY", "SECRET_KEY", "AUTH_TOKEN", "CLIENT_SECRET",
                 "SMTP_PASS", "ADMIN_PASSWORD", "DB_PASS", "REDIS_PASSWORD",
                 "JWT_SECRET", "PRIVATE_KEY_PASSPHRASE", "WEBHOOK_SECRET")


def _assignment(g: _Gen, fmt: str, name: str, value: str) -> str:
    low = name.lower()
    camel = low.split("_")[0] + "".join(p.title() for p in low.split("_")[1:])
    return {
        "dotenv": f"{name}={value}",
        "export": f"export {name}='{value}'",
        "yaml": f"  {low}: {value}",
        "yaml-quoted": f'  {low}: "{value}"',
        "json": f'  "{camel}": "{value}",',
        "toml": f'{low} = "{value}"',
        "python": f'{name} = "{value}"',
        "go": f'\t{camel[:1].upper() + camel[1:]}: "{value}",',
        "js": f"  {camel}: '{value}',",
        "compose": f"      - {name}={value}",
        "k8s": f'  {low.replace("_", "-")}: "{value}"',
        "ini": f"{low} = {value}",
        "gha": f"  {name}: {value}",
    }[fmt]


_FORMATS = ("dotenv", "export", "yaml", "yaml-quoted", "json", "toml", "python", "go", "js",
            "compose", "k8s", "ini", "gha")


# Line secrets: (kind, maker) -> (value, line holding it, atoms).
def _line_secrets() -> dict[str, Callable[[_Gen], tuple[str, str]]]:
    def sas(g: _Gen) -> tuple[str, str]:
        sig = urllib.parse.quote(base64.b64encode(bytes(g.r.randrange(256) for _ in range(32))).decode(), safe="")
        return sig, (f"https://acct{g.s(4, _LOWER)}.blob.core.windows.net/backups/db.bak?sv=2022-11-02"
                     f"&ss=b&srt=co&sp=rl&se=2026-12-31T00:00:00Z&spr=https&sig={sig}")

    def url_hash(g: _Gen) -> tuple[str, str]:
        pw = g.password() + "#" + g.s(4)
        return pw, f"redis://default:{pw}@cache-{g.s(4, _LOWER)}.internal:6379/0"

    return {
        "docker-login-p": lambda g: (pw := g.password(), f"docker login -u ci-bot -p {pw} registry.example.com"),
        "mysql-p": lambda g: (pw := g.password(), f"mysql -h db.internal -u app -p{pw} shop_production"),
        "redis-cli-a": lambda g: (pw := g.password(), f"redis-cli -h cache.internal -p 6379 -a {pw} PING"),
        "curl-u": lambda g: (pw := g.password(), f"curl -sS -u deploy:{pw} https://ci.example.com/api/json"),
        "sshpass": lambda g: (pw := g.password(), f"sshpass -p '{pw}' ssh admin@10.0.4.17 uptime"),
        "kubeadm-token": lambda g: (
            tok := f"{g.s(6, _LOWER)}.{g.s(16, _LOWER)}",
            f"kubeadm join 10.0.0.1:6443 --token {tok} --discovery-token-ca-cert-hash sha256:{g.s(64, _HEX)}",
        ),
        "azure-sas": sas,
        "go-dsn": lambda g: (pw := g.password(), f'dsn := "app:{pw}@tcp(127.0.0.1:3306)/shop?parseTime=true"'),
        "ado-connection": lambda g: (
            pw := g.password(),
            f"Server=tcp:sql-{g.s(5, _LOWER)}.database.windows.net,1433;Database=shop;User ID=app;Password={pw};Encrypt=True;",
        ),
        "url-password": lambda g: (pw := g.password(), f"postgres://app:{pw}@db.internal:5432/app"),
        "url-password-hash": url_hash,
        "mongodb-srv": lambda g: (pw := g.s(16), f"mongodb+srv://admin:{pw}@cluster0.{g.s(5, _LOWER)}.mongodb.net/test?retryWrites=true"),
        "netrc": lambda g: (pw := g.password(), f"machine api.example.com login deploy password {pw}"),
        "x-api-key": lambda g: (k := g.s(40), f'curl https://api.example.com/v1/items -H "x-api-key: {k}"'),
        "azure-api-key": lambda g: (k := g.s(32, _HEX), f'curl "$ENDPOINT/openai/deployments" -H "api-key: {k}"'),
        "goog-api-key-header": lambda g: (k := g.s(39, _B64URL), f'-H "X-Goog-Api-Key: {k}"'),
        "datadog-header": lambda g: (k := g.s(32, _HEX), f'curl -X POST https://api.datadoghq.com/api/v1/series -H "DD-API-KEY: {k}"'),
        "gitlab-private-token": lambda g: (k := g.s(20, _ALNUM), f'curl --header "PRIVATE-TOKEN: {k}" https://gitlab.example.com/api/v4/projects'),
        "apim-subscription": lambda g: (k := g.s(32, _HEX), f"Ocp-Apim-Subscription-Key: {k}"),
        "bearer-lowercase": lambda g: (t := g.s(44, _B64URL), f"authorization: bearer {t}"),
        "pct-encoded-token": lambda g: (t := "ghp_" + g.s(36), f"https://example.com/login?next=%2F&auth=token%20{t}"),
        "quoted-star": lambda g: (pw := g.password("*"), f'password = "{pw}"'),
        "quoted-hash": lambda g: (pw := g.password("#"), f'"secret": "{pw}"'),
        "aws-secret": lambda g: (k := g.s(40, _B64), f"aws_secret_access_key = {k}"),
        "basic-auth-header": lambda g: (
            v := base64.b64encode(f"admin:{g.password()}".encode()).decode(),
            f"Authorization: Basic {v}",
        ),
        "htpasswd-flag": lambda g: (pw := g.password(), f"psql 'host=db.internal user=app password={pw} dbname=shop'"),
    }


_LINES = _line_secrets()


def _pem(g: _Gen, label: str, lines: int) -> tuple[str, list[str]]:
    body = g.pem_lines(lines, 70 if label == "OPENSSH" else 64)
    head = f"-----BEGIN {label} PRIVATE KEY-----" if label else "-----BEGIN PRIVATE KEY-----"
    tail = head.replace("BEGIN", "END")
    return "\n".join([head, *body, tail]), body


# ----------------------------------------------------------------------------------------
# Transcript writing
# ----------------------------------------------------------------------------------------
class _Session:
    """Claude Code JSONL records of one session (and its sub-agents)."""

    def __init__(self, root: Path, n: int, start: datetime) -> None:
        self.id = f"{n:08x}-5ec0-4e7a-9d1f-{n:012x}"
        self.root = root
        self.t = start
        self.lines: list[dict] = []
        self.agents: dict[str, list[dict]] = {}
        self.parent: str | None = None
        self.k = 0
        self.title: str | None = None

    def _rec(self, kind: str, agent: str = "", **extra: object) -> dict:
        self.k += 1
        self.t += timedelta(seconds=7)
        uid = f"{self.id[:8]}-{self.k:06d}"
        rec = {"parentUuid": self.parent, "isSidechain": bool(agent), "userType": "external",
               "cwd": "/home/dev/shop", "sessionId": self.id, "version": "2.1.29",
               "gitBranch": "main", "type": kind, "uuid": uid,
               "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.000Z")}
        if agent:
            rec["agentId"] = agent
        rec.update(extra)
        self.parent = uid
        (self.agents.setdefault(agent, []) if agent else self.lines).append(rec)
        return rec

    def user(self, text: str, agent: str = "") -> None:
        self._rec("user", agent, message={"role": "user", "content": text})

    def say(self, text: str, agent: str = "") -> None:
        self._rec("assistant", agent, message={"id": f"msg_{self.k}", "role": "assistant",
                  "content": [{"type": "text", "text": text}]})

    def tool(self, name: str, inp: dict, result: str, agent: str = "", error: bool = False) -> None:
        tid = f"toolu_{self.id[:6]}{self.k:05d}"
        self._rec("assistant", agent, message={"id": f"msg_{self.k}", "role": "assistant",
                  "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        block: dict = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if error:
            block["is_error"] = True
        self._rec("user", agent, message={"role": "user", "content": [block]})

    def write(self) -> list[Path]:
        folder = self.root / "-home-dev-shop"
        folder.mkdir(parents=True, exist_ok=True)
        out = []
        lines = list(self.lines)
        if self.title:
            lines.append({"type": "summary", "summary": self.title, "leafUuid": "x"})
        path = folder / f"{self.id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        out.append(path)
        for agent, recs in self.agents.items():
            sub = folder / self.id / "subagents" / f"agent-{agent}.jsonl"
            sub.parent.mkdir(parents=True, exist_ok=True)
            sub.write_text("".join(json.dumps(r) + "\n" for r in recs))
            out.append(sub)
        return out


def _numbered(lines: Iterable[str], first: int = 1) -> str:
    return "\n".join(f"{i:6}\u2192{line}" for i, line in enumerate(lines, first))


def _filler(g: _Gen, n: int) -> list[str]:
    words = ["ok", "building", "step", "cache hit", "GET /health 200", "compiled", "linking"]
    return [f"[{i:03d}] {g.r.choice(words)} {g.s(6, _LOWER)}" for i in range(n)]


# Contexts a one-line secret is placed in; each writes events into a session.
def _place_line(g: _Gen, s: _Session, ctx: str, line: str) -> None:
    agent = f"a{g.s(16, _HEX)}"
    if ctx == "prompt":
        s.user(f"This fails for me, can you check?\n{line}\nIt worked yesterday.")
    elif ctx == "assistant":
        s.user("What should I run?")
        s.say(f"Run this:\n\n```\n{line}\n```\n\nThen check the output.")
    elif ctx == "bash-command":
        s.user("Check the service.")
        s.tool("Bash", {"command": line, "description": "Check the service"}, "ok")
    elif ctx == "bash-output":
        s.user("Show the config.")
        s.tool("Bash", {"command": "cat deploy/settings.conf"}, f"# settings\n{line}\nretries = 3")
    elif ctx == "bash-output-long":
        s.user("Run the deploy script with tracing.")
        lines = _filler(g, 25) + [line] + _filler(g, 30)
        s.tool("Bash", {"command": "bash -x deploy.sh"}, "\n".join(lines))
    elif ctx == "read-result":
        s.user("Read the deploy notes.")
        lines = ["# Deploy notes", "", *_filler(g, g.r.randint(0, 20)), line, "", "done"]
        s.tool("Read", {"file_path": "/home/dev/shop/NOTES.md"}, _numbered(lines))
    elif ctx == "edit-new":
        s.user("Update the script.")
        s.tool("Edit", {"file_path": "/home/dev/shop/deploy.sh", "old_string": "# TODO login",
                        "new_string": f"# login\n{line}"},
               "The file /home/dev/shop/deploy.sh has been updated successfully.")
    elif ctx == "edit-old":
        s.user("Remove the hard-coded credential.")
        s.tool("Edit", {"file_path": "/home/dev/shop/deploy.sh", "old_string": line,
                        "new_string": "source ./secrets.sh"},
               "The file /home/dev/shop/deploy.sh has been updated successfully.")
    elif ctx == "write-content":
        s.user("Write the script.")
        s.tool("Write", {"file_path": "/home/dev/shop/run.sh",
                         "content": "#!/bin/sh\nset -eu\n" + "\n".join(_filler(g, 8)) + f"\n{line}\n"},
               "File created successfully at: /home/dev/shop/run.sh")
    elif ctx == "grep-output":
        s.user("Where is it used?")
        s.tool("Grep", {"pattern": "login", "path": "/home/dev/shop"},
               f"deploy.sh:12:{line}\nREADME.md:4:see deploy.sh")
    elif ctx == "subagent-prompt":
        s.user("Let an agent investigate.")
        s.tool("Task", {"description": "Investigate login", "subagent_type": "general-purpose",
                        "prompt": f"Find out why this fails:\n{line}"}, "The login works now.")
    elif ctx == "subagent-bash":
        s.user("Investigate in a sub-agent.")
        s.user(f"Investigate the deploy login for {agent}.", agent=agent)
        s.tool("Bash", {"command": line}, "ok", agent=agent)
        s.say("Done.", agent=agent)
    elif ctx == "subagent-output":
        s.user("Investigate in a sub-agent.")
        s.user("Collect the environment.", agent=agent)
        s.tool("Bash", {"command": "env | sort"}, "HOME=/root\n" + line + "\nTERM=xterm", agent=agent)
        s.say("Collected.", agent=agent)
    elif ctx == "bash-error":
        s.user("Connect to the database.")
        s.tool("Bash", {"command": "./connect.sh"}, f"error: cannot connect using {line}", error=True)
    elif ctx == "todo":
        s.user("Plan it.")
        s.tool("TodoWrite", {"todos": [{"content": f"Rotate {line}", "status": "pending",
                                        "activeForm": "Rotating"}]}, "Todos have been modified successfully.")
    elif ctx == "title":
        s.user("Let's fix the deploy.")
        s.say("Looking.")
        s.title = f"Fix deploy: {line}"[:200]
    elif ctx == "custom-title":
        s.user("Let's fix the deploy.")
        s.say("Looking.")
        s._rec("custom-title", customTitle=f"deploy {line}"[:200])
    else:
        raise ValueError(ctx)


_LINE_CONTEXTS = ("prompt", "assistant", "bash-command", "bash-output", "bash-output-long",
                  "read-result", "edit-new", "edit-old", "write-content", "grep-output",
                  "subagent-prompt", "subagent-bash", "subagent-output", "bash-error", "todo",
                  "title", "custom-title")
# A private key is many lines: no title, todo or grep line.
_PEM_CONTEXTS = ("prompt", "bash-output", "bash-output-long", "read-result", "edit-new",
                 "write-content", "subagent-output", "json-escaped", "read-json", "diff-output")


def _place_file(g: _Gen, s: _Session, fmt: str, line: str) -> str:
    """A config file holding ``line`` among harmless settings, read/written/edited."""
    ctx = g.r.choice(["read", "write", "edit", "cat"])
    body = [f"# {fmt} settings", _assignment(g, fmt, "LOG_LEVEL", "info"), line,
            _assignment(g, fmt, "PORT", "8080")]
    text = "\n".join(body)
    if ctx == "read":
        s.user(f"Read the {fmt} config.")
        s.tool("Read", {"file_path": f"/home/dev/shop/config.{fmt}"}, _numbered(body))
    elif ctx == "write":
        s.user(f"Write the {fmt} config.")
        s.tool("Write", {"file_path": f"/home/dev/shop/config.{fmt}", "content": text + "\n"},
               "File created successfully.")
    elif ctx == "edit":
        s.user(f"Edit the {fmt} config.")
        s.tool("Edit", {"file_path": f"/home/dev/shop/config.{fmt}", "old_string": body[1],
                        "new_string": f"{body[1]}\n{line}"}, "The file has been updated successfully.")
    else:
        s.user(f"Show the {fmt} config.")
        s.tool("Bash", {"command": f"cat config.{fmt}"}, text)
    return f"{fmt}-{ctx}"


def _place_pem(g: _Gen, s: _Session, ctx: str, pem: str) -> None:
    if ctx == "json-escaped":
        doc = json.dumps({"type": "service_account", "project_id": "shop-prod",
                          "private_key_id": g.s(40, _HEX), "private_key": pem + "\n",
                          "client_email": "ci@shop-prod.iam.gserviceaccount.com"}, indent=2)
        s.user("Use this service account.")
        s.tool("Write", {"file_path": "/home/dev/shop/sa.json", "content": doc}, "File created successfully.")
    elif ctx == "read-json":
        doc = json.dumps({"type": "service_account", "private_key": pem + "\n",
                          "client_email": "ci@shop-prod.iam.gserviceaccount.com"}, indent=2)
        s.user("Read the service account.")
        s.tool("Read", {"file_path": "/home/dev/shop/sa.json"}, _numbered(doc.splitlines()))
    elif ctx == "diff-output":
        s.user("Show the diff.")
        diff = "diff --git a/key.pem b/key.pem\n+++ b/key.pem\n" + "\n".join("+" + x for x in pem.splitlines())
        s.tool("Bash", {"command": "git diff --cached"}, diff)
    else:
        _place_line(g, s, ctx, pem)


# Look-alikes: kind -> maker; every value must be stored verbatim.
def _lookalikes() -> dict[str, Callable[[_Gen], str]]:
    def png(g: _Gen) -> str:
        raw = b"\x89PNG\r\n\x1a\n" + bytes(g.r.randrange(256) for _ in range(90))
        return "data:image/png;base64," + base64.b64encode(raw).decode()

    def public_pem(g: _Gen) -> str:
        label = g.r.choice(["PUBLIC KEY", "CERTIFICATE"])
        return "\n".join([f"-----BEGIN {label}-----", *g.pem_lines(4), f"-----END {label}-----"])

    return {
        "commit-sha": lambda g: g.s(40, _HEX),
        "short-sha": lambda g: f"commit {g.s(7, _HEX)}",
        "sha256": lambda g: f"sha256:{g.s(64, _HEX)}",
        "md5": lambda g: f"md5sum: {g.s(32, _HEX)}  dist/app.tar.gz",
        "uuid": lambda g: f"{g.s(8, _HEX)}-{g.s(4, _HEX)}-4{g.s(3, _HEX)}-a{g.s(3, _HEX)}-{g.s(12, _HEX)}",
        "base64-image": png,
        "npm-integrity": lambda g: "sha512-" + base64.b64encode(bytes(g.r.randrange(256) for _ in range(64))).decode(),
        "go-sum": lambda g: f"golang.org/x/net v0.{g.r.randint(1, 40)}.0 h1:" + base64.b64encode(bytes(g.r.randrange(256) for _ in range(32))).decode(),
        "version": lambda g: f"v{g.r.randint(0, 9)}.{g.r.randint(0, 40)}.{g.r.randint(0, 99)}-rc.{g.r.randint(1, 9)}+build.{g.r.randint(100, 999)}",
        "identifier": lambda g: g.r.choice(["getUserAccessToken", "refreshTokenExpiry", "passwordResetTokenTtl", "apiKeyHeaderName"]) + g.s(4, string.ascii_uppercase),
        "placeholder-angle": lambda g: f"API_KEY=<your-{g.r.choice(['api', 'openai', 'stripe'])}-key>",
        "placeholder-x": lambda g: f"GITHUB_TOKEN=ghp_{'x' * 36}",
        "placeholder-env": lambda g: "password: ${{ secrets." + g.r.choice(["DB_PASSWORD", "NPM_TOKEN"]) + " }}",
        "placeholder-shell": lambda g: f"export TOKEN=${g.r.choice(['TOKEN', 'GH_TOKEN', '{CI_TOKEN}'])}",
        "placeholder-code": lambda g: g.r.choice(['api_key = os.environ["API_KEY"]', "token = process.env.NPM_TOKEN", "password = get_password()", "secret := os.Getenv(\"SECRET\")"]),
        "placeholder-here": lambda g: f"token: paste-your-token-here-{g.s(3, _LOWER)}",
        "type-annotation": lambda g: g.r.choice(["password: str", "token: Optional[str] = None", "api_key: SecretStr"]) + f"  # field {g.s(3, _LOWER)}",
        "tool-use-id": lambda g: "toolu_01" + g.s(22),
        "message-id": lambda g: "msg_01" + g.s(22),
        "request-id": lambda g: "req_011C" + g.s(20),
        "pod-name": lambda g: f"api-{g.s(9, _LOWER)}-{g.s(5, _LOWER)}",
        "docker-digest": lambda g: f"nginx@sha256:{g.s(64, _HEX)}",
        "ssh-public": lambda g: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g.s(43, _B64) + " dev@laptop",
        "public-pem": public_pem,
        "timestamp": lambda g: f"2026-0{g.r.randint(1, 9)}-1{g.r.randint(0, 9)}T0{g.r.randint(0, 9)}:{g.r.randint(10, 59)}:{g.r.randint(10, 59)}.{g.s(3, string.digits)}Z",
        "ipv6": lambda g: ":".join(g.s(4, _HEX) for _ in range(8)),
        "css-color": lambda g: f"color: #{g.s(6, _HEX)};",
        "arn": lambda g: f"arn:aws:iam::{g.s(12, string.digits)}:role/deploy-{g.s(4, _LOWER)}",
        "token-ttl": lambda g: f"TOKEN_EXPIRY_SECONDS={g.r.randint(60, 86400)}",
        "password-stdin": lambda g: f"echo \"$CR_PAT\" | docker login ghcr.io -u ci-{g.s(3, _LOWER)} --password-stdin",
        "cache-key": lambda g: f'cache_key = "{g.s(64, _HEX)}"',
        "base64-text": lambda g: base64.b64encode(f"hello world {g.s(8, _LOWER)}".encode()).decode(),
        "go-test-pass": lambda g: f"--- PASS: TestToken{g.s(4, string.ascii_uppercase)} (0.0{g.r.randint(1, 9)}s)",
        "masked": lambda g: f"OPENAI_API_KEY=sk-...{g.s(4)}",
        "path-hex": lambda g: f"/tmp/pytest-of-dev/pytest-{g.r.randint(1, 99)}/test_{g.s(6, _LOWER)}0/{g.s(32, _HEX)}.json",
    }


_LOOK = _lookalikes()
_LOOK_CONTEXTS = ("prompt", "assistant", "bash-command", "read-head", "write-head", "edit-new")


def _place_lookalike(g: _Gen, s: _Session, ctx: str, value: str) -> None:
    if ctx == "prompt":
        s.user(f"Note: {value}")
    elif ctx == "assistant":
        s.user("What did you find?")
        s.say(f"Found it:\n{value}\nThat is expected.")
    elif ctx == "bash-command" and "\n" not in value:
        s.user("Check it.")
        s.tool("Bash", {"command": f"echo '{value}'"}, "ok")
    elif ctx == "read-head":
        s.user("Read it.")
        s.tool("Read", {"file_path": "/home/dev/shop/notes.txt"}, _numbered(value.splitlines()))
    elif ctx == "write-head" and value.count("\n") < 4:
        s.user("Write it down.")
        s.tool("Write", {"file_path": "/home/dev/shop/notes.txt", "content": value + "\n"}, "File created successfully.")
    else:
        s.user("Edit it.")
        s.tool("Edit", {"file_path": "/home/dev/shop/notes.txt", "old_string": "old",
                        "new_string": value}, "The file has been updated successfully.")


# ----------------------------------------------------------------------------------------
# Building the corpus
# ----------------------------------------------------------------------------------------
def write_corpus(root: Path, *, seed: int = 17, per_kind: int = 6, lookalikes_per_kind: int = 9,
                 events_per_session: int = 6) -> Corpus:
    """Write transcripts holding the generated secrets and look-alikes under ``root``.

    Each secret kind appears ``per_kind`` times, contexts taken in turn; each look-alike kind
    ``lookalikes_per_kind`` times. Sessions hold ``events_per_session`` placements each.
    """
    g = _Gen(seed)
    corpus = Corpus()
    sessions: list[_Session] = []
    start = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)

    def session() -> _Session:
        if not sessions or len(sessions[-1].lines) >= events_per_session * 4 or sessions[-1].title:
            sessions.append(_Session(root, len(sessions) + 1, start + timedelta(hours=len(sessions))))
        return sessions[-1]

    turn = 0
    for kind, make in _TOKENS.items():
        for i in range(per_kind):
            value = make(g)
            mode = (turn + i) % 3
            if mode == 0:  # bare in a line, any line context
                ctx = _LINE_CONTEXTS[(turn + i) % len(_LINE_CONTEXTS)]
                line = g.r.choice([f"my token is {value} please keep it safe",
                                   f"use {value} for the API", f"token={value}",
                                   f"curl -H 'Authorization: Bearer {value}' https://api.example.com"])
                if kind in _CONTEXT_ONLY:  # no prefix of its own: only its context tells
                    line = f"export VAULT_TOKEN={value}"
                _place_line(g, session(), ctx, line)
            else:  # assigned in a config file format
                fmt = _FORMATS[(turn + i) % len(_FORMATS)]
                name = g.r.choice(_SECRET_NAMES) if mode == 1 else f"{kind.upper().replace('-', '_')}_TOKEN"
                ctx = _place_file(g, session(), fmt, _assignment(g, fmt, name, value))
            corpus.secrets.append(Item(kind, value, ctx))
        turn += 1
    for kind, make in _LINES.items():
        for i in range(per_kind):
            value, line = make(g)
            ctx = _LINE_CONTEXTS[(turn + i) % len(_LINE_CONTEXTS)]
            _place_line(g, session(), ctx, line)
            corpus.secrets.append(Item(kind, value, ctx))
        turn += 1
    for kind in ("generic-password", "generic-api-key"):
        for i in range(per_kind):
            value = g.password() if kind == "generic-password" else g.s(32)
            fmt = _FORMATS[(turn + i) % len(_FORMATS)]
            ctx = _place_file(g, session(), fmt, _assignment(g, fmt, g.r.choice(_SECRET_NAMES), value))
            corpus.secrets.append(Item(kind, value, ctx))
        turn += 1
    for label in ("RSA", "OPENSSH", "EC", "", "ENCRYPTED"):
        kind = f"private-key-{(label or 'pkcs8').lower()}"
        for i in range(per_kind):
            pem, body = _pem(g, label, g.r.choice([6, 12, 27]))
            ctx = _PEM_CONTEXTS[(turn + i) % len(_PEM_CONTEXTS)]
            _place_pem(g, session(), ctx, pem)
            corpus.secrets.append(Item(kind, pem, ctx, tuple(body)))
        turn += 1
    for kind, make in _LOOK.items():
        for i in range(lookalikes_per_kind):
            value = make(g)
            ctx = _LOOK_CONTEXTS[(turn + i) % len(_LOOK_CONTEXTS)]
            _place_lookalike(g, session(), ctx, value)
            corpus.lookalikes.append(Item(kind, value, ctx))
        turn += 1
    for s in sessions:
        corpus.files += s.write()
    return corpus


# ----------------------------------------------------------------------------------------
# Scanning a store
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScanResult:
    secrets: int
    leaked: list[Item]
    lookalikes: int
    altered: list[Item]

    @property
    def leak_rate(self) -> float:
        return len(self.leaked) / self.secrets if self.secrets else 0.0

    @property
    def altered_rate(self) -> float:
        return len(self.altered) / self.lookalikes if self.lookalikes else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "secrets": self.secrets, "secrets_found_in_db": len(self.leaked),
            "found_rate": round(self.leak_rate, 4),
            "lookalikes": self.lookalikes, "lookalikes_altered": len(self.altered),
            "altered_rate": round(self.altered_rate, 4),
            "leaked": sorted({f"{i.kind}@{i.context}" for i in self.leaked}),
            "altered": sorted({f"{i.kind}@{i.context}" for i in self.altered}),
        }


def _windows(item: Item) -> set[bytes]:
    out: set[bytes] = set()
    for atom in item.parts():
        raw = atom.encode()
        for k in range(len(raw) - FRAGMENT + 1):
            out.add(raw[k : k + FRAGMENT])
    return out


class _WindowIndex:
    """Hashes of every 12-byte window of some byte strings, to test many fragments at once."""

    def __init__(self, haystacks: list[bytes]) -> None:
        import numpy as np

        self.np = np
        self.haystacks = [h for h in haystacks if len(h) >= FRAGMENT]
        parts = []
        for data in self.haystacks:
            arr = np.frombuffer(data, dtype=np.uint8).astype(np.uint64)
            n = len(arr) - FRAGMENT + 1
            h = np.zeros(n, dtype=np.uint64)
            for j in range(FRAGMENT):
                h = h * np.uint64(131) + arr[j : n + j]
            parts.append(h)
        # Sorted, duplicates kept: searchsorted needs no more (np.unique hashes, far slower).
        self.hashes = np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)

    def any(self, windows: set[bytes]) -> bool:
        """Whether any of these 12-byte windows occurs in a haystack."""
        if not windows or not len(self.hashes):
            return False
        ordered = sorted(windows)
        hashes = self.np.array([_hash(w) for w in ordered], dtype=self.np.uint64)
        at = self.np.searchsorted(self.hashes, hashes).clip(max=len(self.hashes) - 1)
        for k in self.np.nonzero(self.hashes[at] == hashes)[0]:
            if any(ordered[k] in data for data in self.haystacks):
                return True
        return False


def _hash(w: bytes) -> int:
    h = 0
    for b in w:
        h = (h * 131 + b) & 0xFFFFFFFFFFFFFFFF
    return h


def store_bytes(db: Path) -> list[bytes]:
    """The raw bytes of the database file and its -wal / -shm / -journal, as they are."""
    out = []
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = db.with_name(db.name + suffix)
        if p.exists():
            out.append(p.read_bytes())
    return out


def fts_terms(db: Path) -> bytes:
    """Every term of the FTS vocabulary, newline-separated (tokens are stored compressed)."""
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return "\n".join(r[0] for r in conn.execute("SELECT term FROM chunks_fts_vocab")).encode()
    finally:
        conn.close()


def stored_text(db: Path) -> str:
    """Every text column a reader sees: chunk text and meta, titles, states, topic names."""
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        parts = [r[0] for r in conn.execute("SELECT text || char(10) || meta FROM chunks")]
        parts += [r[0] or "" for r in conn.execute("SELECT title FROM sessions")]
        return "\n".join(parts)
    finally:
        conn.close()


def scan_store(db: Path, corpus: Corpus, *, raw: list[bytes] | None = None) -> ScanResult:
    """Which secrets (or 12-character fragments of them) are in the store's bytes, and which
    look-alikes are no longer stored verbatim. ``raw`` defaults to `store_bytes(db)`."""
    hay = _WindowIndex(list(store_bytes(db) if raw is None else raw))
    terms = _WindowIndex([fts_terms(db)])
    leaked = []
    for item in corpus.secrets:
        windows = _windows(item)
        if hay.any(windows) or terms.any({w.lower() for w in windows}):
            leaked.append(item)
    text = stored_text(db)
    # A multi-line look-alike is stored line by line (Read numbers lines, Edit prefixes them).
    altered = [item for item in corpus.lookalikes
               if any(line not in text for line in item.value.splitlines())]
    return ScanResult(len(corpus.secrets), leaked, len(corpus.lookalikes), altered)
