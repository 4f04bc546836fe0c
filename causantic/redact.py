"""Secret redaction: replace credentials in transcript text by ``[REDACTED:<kind>]``.

Every chunk passes through here before it is stored, indexed or embedded (DESIGN.md 2.9), so
this module is on the ingest hot path and uses only the standard library.

Design
------
Each detector is anchored on a literal: a rare character or a short fixed string that every
candidate must contain (``J`` of ``eyJ`` for a JWT, ``k`` of ``token``/``key``/``sk-``, ``@`` of
``user:pass@host``...). Python's ``re`` scans for a pattern that *starts with a literal* at
about 2 GB/s, and ``str.find`` finds a rare character faster still, while a pattern that starts
with a character class crawls at a tenth of that. So detectors that share an anchor share one
pattern (one scan), and the anchor is usually a character from the middle of the secret, with
a fixed-width look-behind confirming the prefix. Ordinary text costs about twenty fast scans;
only candidates reach Python code, which checks boundaries, placeholders and context.

All detectors look at the original text and return spans; overlapping spans are merged (the
union is hidden, the longer span names the kind) and the text is rebuilt once.

Invariants
----------
- Only the secret value is replaced; names, quotes, schemes and hosts stay, so the text stays
  searchable (``GITHUB_TOKEN=[REDACTED:github-token]``).
- Idempotent: a candidate that overlaps an existing ``[REDACTED:...]`` marker is dropped and
  no detector accepts a value containing ``REDACTED``, so ``redact(redact(x)) == redact(x)``.
- Every quantifier is bounded; no pattern can backtrack more than linearly.
- A value that has the exact shape of a known token (``ghp_...``, ``AKIA...``) is reported under
  that token's kind wherever it is found (bare, in an assignment, in a URL, after ``Bearer``).
- Text between ``<private>`` and ``</private>`` (any case) is hidden whole, markers inside it
  included; with no closing tag, to the end of the text (a forgotten tag errs on privacy).

Limits (deliberate, each for speed or to avoid false positives)
---------------------------------------------------------------
- A legacy Vault token (``s.`` + 24 characters) has no distinctive prefix: it is recognised
  only as an assigned value (``VAULT_TOKEN=s....``), not bare in prose.
- A password flag counts only after the commands known to take one there (``docker login
  -p``, ``sshpass -p``, ``mysql -pX``, ``redis-cli -a``, ``curl -u user:pass``); ``-p`` is a
  port or a parents flag elsewhere.
- A quoted value with spaces under a lowercase name (``"password": "two words"``, usually a
  UI label) is not redacted.
- An unquoted identifier without digits after ``password =`` in code is taken for a
  variable (``password = hunter``); in a shell/.env assignment or a YAML line it is a value.
- A hexadecimal value under a generic ``*_key`` name counts only in ``NAME=value`` form;
  elsewhere it is far more often a hash (``cache_key = "<sha256>"``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from causantic.errors import UsageError

__all__ = ["KINDS", "RULES_VERSION", "Redaction", "Redactor", "default_redactor", "marker"]

#: Raise when the detectors change what they find, so stores redacted under older rules are
#: reported by `causantic doctor` and fixed by `causantic redact --rescan`. 1: up to issue 17;
#: 2: redaction before trimming, PEM through prefixes, the shapes of issue 17; 3: text the
#: user marked ``<private>…</private>``.
RULES_VERSION = 3

#: Every kind the built-in detectors report, with what it covers.
KINDS: Mapping[str, str] = MappingProxyType(
    {
        "aws-access-key": "AWS access key id (AKIA/ASIA/ABIA/ACCA + 16 characters)",
        "aws-secret-key": "AWS secret access key (40 characters) assigned to an aws secret name",
        "github-token": "GitHub token (ghp_/gho_/ghu_/ghs_/ghr_, github_pat_)",
        "gitlab-token": "GitLab token (glpat-, gldt-, glrt-, glptt- ...)",
        "slack-token": "Slack token (xoxb-/xoxp-/xoxa-/xoxr-/xoxs-, xapp-)",
        "slack-webhook": "path of a hooks.slack.com webhook URL",
        "discord-webhook": "token part of a Discord webhook URL",
        "openai-key": "OpenAI-style key (sk-proj-, sk-svcacct-, sk-admin-, legacy sk-...)",
        "anthropic-key": "Anthropic key or OAuth token (sk-ant-api03-, sk-ant-oat01- ...)",
        "stripe-key": "Stripe secret or restricted key (sk_live_, rk_test_ ...), webhook secret whsec_",
        "google-api-key": "Google API key (AIza + 35 characters)",
        "google-oauth": "Google OAuth client secret (GOCSPX-) or access token (ya29.)",
        "npm-token": "npm access token (npm_ + 36 characters)",
        "docker-token": "Docker Hub personal access token (dckr_pat_...)",
        "huggingface-token": "Hugging Face token (hf_ + 34 letters/digits)",
        "sendgrid-key": "SendGrid API key (SG.<22>.<43>)",
        "pypi-token": "PyPI upload token (pypi-AgEIcHlwaS5vcmc...)",
        "age-secret-key": "age encryption secret key (AGE-SECRET-KEY-1...)",
        "jwt": "JSON Web Token (eyJ<header>.eyJ<payload>.<signature>)",
        "private-key": "whole PEM private key block (RSA, EC, OPENSSH, PGP, PKCS#8, encrypted)",
        "url-password": "password part of scheme://user:password@host",
        "bearer": "credential after Authorization: Bearer / Basic",
        "env-secret": "value assigned to a *_TOKEN, *_SECRET, *_PASSWORD, *_API_KEY ... name",
        "high-entropy": "long random-looking value assigned to a *_KEY-style name",
        "vault-token": "HashiCorp Vault token (hvs./hvb./hvr., legacy s. as a value)",
        "vendor-token": "other vendor tokens by prefix: Shopify shpat_, Linear lin_api_, "
        "DigitalOcean dop_v1_, Supabase sbp_, Grafana glsa_, Postman PMAK-, New Relic NRAK-, "
        "Databricks dapi, Atlassian ATATT3, Sentry sntrys_, Telegram bot tokens",
        "kubeadm-token": "kubeadm bootstrap token (6.16 characters) as a value",
        "cli-password": "password on a command line: docker/podman/helm login -p, sshpass -p, "
        "mysql -pX, redis-cli -a, curl -u user:pass, ldapsearch -w, smbclient -U user%pass, "
        "openssl -passout pass:X, az login -p",
        "azure-sas": "signature (sig=) of an Azure shared access signature URL",
        "private": "text the user marked <private>…</private>, tags included (to the end of "
        "the text when the closing tag is missing)",
    }
)

_MARKER_PREFIX = "[REDACTED:"
_KIND_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def marker(kind: str) -> str:
    """The replacement text for a secret of ``kind``: ``[REDACTED:<kind>]``."""
    return f"{_MARKER_PREFIX}{kind}]"


@dataclass(frozen=True)
class Redaction:
    """The redacted text and how many secrets of each kind were replaced."""

    text: str
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def total(self) -> int:
        """Number of replacements of every kind."""
        return sum(self.counts.values())


# A span to hide: (start, end, kind), end exclusive.
_Span = tuple[int, int, str]
_Handler = Callable[[str, "re.Match[str]"], "_Span | None"]

# --------------------------------------------------------------------------------------------
# Exact token shapes. Used to name the kind of any value found by a context detector, so a
# GitHub token in GITHUB_TOKEN=... counts as github-token, not env-secret.
# --------------------------------------------------------------------------------------------
_B64URL = "A-Za-z0-9_-"
_SHAPES: tuple[tuple[str, str], ...] = (
    ("aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}"),
    ("github-token", r"gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251}"),
    ("gitlab-token", r"gl(?:pat|dt|rt|ptt|cbt|imt|soat|ft|oas|agent)-[A-Za-z0-9_.-]{20,256}"),
    ("slack-token", r"xox[abposre]-[A-Za-z0-9-]{10,250}|xapp-\d-[A-Za-z0-9-]{10,250}"),
    ("anthropic-key", r"sk-ant-(?:api|admin|oat|ort|sid)\d\d-[A-Za-z0-9_-]{20,256}"),
    (
        "openai-key",
        r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,256}"
        r"|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|sk-(?!ant-)[A-Za-z0-9]{32,256}",
    ),
    ("stripe-key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}|whsec_[A-Za-z0-9+/=]{24,128}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}"),
    ("google-oauth", r"GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[0-9A-Za-z_-]{30,2048}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    ("docker-token", r"dckr_pat_[A-Za-z0-9_-]{27,128}"),
    ("huggingface-token", r"hf_[A-Za-z0-9]{34,40}"),
    ("sendgrid-key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    ("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,512}"),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    (
        "vault-token",
        r"hv[sbr]\.[A-Za-z0-9_-]{24,256}"
        r"|s\.(?=[A-Za-z0-9]{0,23}[0-9])(?=[A-Za-z0-9]{0,23}[A-Z])[A-Za-z0-9]{24}",
    ),
    (
        "vendor-token",
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|lin_api_[A-Za-z0-9]{40}|do[por]_v1_[a-f0-9]{64}"
        r"|sbp_[a-f0-9]{40}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"
        r"|NRAK-[A-Z0-9]{27}|dapi[a-f0-9]{32}(?:-\d)?|ATATT3[A-Za-z0-9_=-]{100,300}"
        r"|sntry[su]_[A-Za-z0-9_=+/-]{60,300}|\d{8,10}:AA[A-Za-z0-9_-]{33}",
    ),
    ("kubeadm-token", r"[a-z0-9]{6}\.(?=[a-z]{0,15}[0-9])[a-z0-9]{16}"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{0,4096}"),
)
_SHAPE_RE = re.compile("|".join(f"(?P<s{i}>{body})" for i, (_, body) in enumerate(_SHAPES)))
_SHAPE_KIND = {f"s{i}": kind for i, (kind, _) in enumerate(_SHAPES)}
_AWS_SECRET_RE = re.compile(r"[A-Za-z0-9/+]{40}")


def _shape_kind(value: str) -> str | None:
    """The kind of a value that is exactly a known token, else None."""
    m = _SHAPE_RE.fullmatch(value)
    if m is None or m.lastgroup is None:
        return None
    kind = _SHAPE_KIND[m.lastgroup]
    if kind == "jwt" and not _jwt_header_ok(value):
        return None
    return None if _looks_fake(value) else kind


# --------------------------------------------------------------------------------------------
# Placeholders and look-alikes
# --------------------------------------------------------------------------------------------
_PLACEHOLDER_WORDS = frozenset(
    """none null nil true false undefined string str bytes int integer number bool boolean any
    object optional required secret secrets password passwd token key apikey api_key api-key
    changeme change_me changeit example sample dummy test testing placeholder redacted hidden
    masked empty default value env postgres root admin guest user username pass xxx tbd todo
    fixme unset missing notset not_set na n/a ask prompt secretstr secretstring foo bar baz qux
    foobar pwd mypassword mypass mysecret mytoken secretpassword""".split()
)
# Values starting like this are references, templates, paths or expressions, not secrets.
_PLACEHOLDER_PREFIXES = tuple(
    """your my_ my- < { ${ $( % [ ( * ! & # @ insert replace enter_ enter- put_ put- xxx ...
    \u2026 op:// vault: arn: ref+ sm:// secret: env: process.env os.environ os.getenv getenv
    settings. config. self. this. env. import.meta http:// https:// file:// / ./ ../ ~/""".split()
)
_IDENT_RE = re.compile(r"[A-Za-z_$][\w$]{0,127}")
_DOTTED_RE = re.compile(r"[A-Za-z_$][\w$]{0,127}(?:\??\.[A-Za-z_$][\w$]{0,127}){1,16}!?")
# Words joined by - _ . and no digit: a name (my-app-secret, X-Access-Token), not a secret.
_NAME_LIKE_RE = re.compile(r"[A-Za-z]{1,32}(?:[-_.]{1,3}[A-Za-z]{1,32}){1,16}")
# A secret word inside a value without digits: a label or a name ("challengePassword").
_SECRET_WORD_RE = re.compile(r"(?i)passw(?:or)?d|token|secret|api.?key")
# A CamelCase identifier: in `name: Value` outside YAML it is a type annotation.
_CAMEL_RE = re.compile(r"[A-Z][A-Za-z0-9_]{0,127}")
_HEX_RE = re.compile(r"(?:0x)?[0-9a-fA-F]{1,1024}")
_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_SHELL_VAR_RE = re.compile(r"\$(?:[A-Za-z_{(]|\d\b)")


_FAKE_RE = re.compile(r"xxxx|XXXX|\*\*\*|\.\.\.|\u2026|REDACTED|redacted")


def _looks_fake(value: str) -> bool:
    """A value that only shows a shape (``ghp_xxxx``, ``sk-...``, ``****``) or was redacted."""
    return len(set(value[-16:])) <= 3 or _FAKE_RE.search(value) is not None


def _is_placeholder(value: str) -> bool:
    """A value that stands for a secret without being one: ``None``, ``${VAR}``, ``<your-token>``."""
    if len(value) < 4 or _looks_fake(value):
        return True
    low = value.lower()
    if low in _PLACEHOLDER_WORDS or low.startswith(_PLACEHOLDER_PREFIXES):
        return True
    if value.startswith("$") and _SHELL_VAR_RE.match(value):
        return True  # $VAR, ${VAR}, $(cmd); bcrypt "$2b$..." is not a variable
    if "here" in low and ("your" in low or "_here" in low or "-here" in low):
        return True  # paste-your-token-here
    return False


def _entropy(value: str) -> float:
    """Shannon entropy of the characters of ``value``, in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _random_looking(value: str, *, allow_hex: bool) -> bool:
    """A long value with the character mix and entropy of generated credentials."""
    if len(value) < 16 or len(value) > 512 or _UUID_RE.fullmatch(value):
        return False
    if _HEX_RE.fullmatch(value):
        return allow_hex and len(value) >= 32 and _entropy(value) >= 3.0
    if any(c.isspace() for c in value):
        return False
    classes = (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
    )
    return classes >= 2 and any(c.isdigit() for c in value) and _entropy(value) >= 3.5


def _jwt_header_ok(token: str) -> bool:
    """The first part of a JWT decodes to a JSON object naming ``alg`` or ``typ``."""
    head = token.split(".", 1)[0]
    try:
        data = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(data, dict) and ("alg" in data or "typ" in data)


_PCT_RE = re.compile(r"%[0-9A-Fa-f]{2}(?![0-9A-Fa-f]{2})")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _bounded(text: str, start: int, end: int, extra: str = "") -> bool:
    """The characters just outside [start, end) are not token characters."""
    if start > 0 and (text[start - 1] in _TOKEN_CHARS or text[start - 1] in extra):
        if not _PCT_RE.match(text, max(0, start - 3), start):
            return False  # %20ghp_...: a URL-encoded separator is a boundary
    return not (end < len(text) and (text[end] in _TOKEN_CHARS or text[end] in extra))


# --------------------------------------------------------------------------------------------
# Assignments: NAME = value, "name": "value", name: value, --flag value
# --------------------------------------------------------------------------------------------
# Everything after the keyword that ends a name: an optional closing quote/bracket, the
# operator, the value. `TAIL` also accepts a bare space, for `--password hunter2` and .netrc;
# the handler rejects that form anywhere else.
_VALUE = (
    r"""(?:"(?P<vdq>(?:[^"\\\n]|\\[^\n]){0,1024}+)"|'(?P<vsq>[^'\n]{0,1024}+)'"""
    r"""|\\"(?P<vesc>(?:[^"\\\n]|\\[^"\n]){0,1024}+)\\"|(?P<vbare>[^\s"'`,;&|<>(){}\[\]\\]{1,1024}+))"""
)
_VALUE_GROUPS = ("vdq", "vsq", "vesc", "vbare")
_CLOSE = r"""(?![A-Za-z0-9_.\-])(?P<close>\??(?:\\?["'])?\]?)"""
_OP = r"[ \t]{0,4}+(?::=|=>|=(?![=~])|:(?![:=]))[ \t]{0,4}+"
_TAIL = _CLOSE + r"(?P<sep>" + _OP + r"|[ \t]{1,4}+(?=[^\s=:]))" + _VALUE
_TAIL_NS = _CLOSE + r"(?P<sep>" + _OP + r")" + _VALUE

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_UPPER_NAME_RE = re.compile(r"[A-Z][A-Z0-9_]{0,127}")
# Names ending in a secret word that hold non-secrets (compared without _ - . and case).
_NOT_SECRET_ENDINGS = tuple(
    """cancellationtoken canceltoken pagetoken nexttoken nextpagetoken continuationtoken
    paginationtoken synctoken resumptiontoken lexertoken publickeytoken publickey pubkey
    primarykey foreignkey
    sortkey partitionkey cachekey hashkey idempotencykey routingkey objectkey hotkey shortcutkey
    lookupkey uniquekey compositekey rowkey groupkey publishablekey mapkey dictkey threadkey
    storekey statekey querykey i18nkey translationkey localekey rediskey s3key bucketkey""".split()
)
# Shell variables named like secrets that hold directories.
_NOT_SECRET_EXACT = frozenset({"pwd", "oldpwd"})
# *_KEY names that always hold secrets; other *_KEY names need a random-looking value.
_SECRET_KEY_NAMES = (
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "authkey",
    "secretkeybase",
    "adminkey",
    "subscriptionkey",  # Ocp-Apim-Subscription-Key
    "functionskey",
    "applicationkey",
    "masterkey",
    "accountkey",  # Azure storage connection strings
    "sharedaccesskey",
    "rapidapikey",
)
_STRONG_ENDINGS = ("token", "secret", "password", "passwd", "passphrase", "pwd")
_TYPE_LIKE = re.compile(r"[A-Z][A-Za-z]{0,63}")


def _name_start(text: str, end: int) -> int:
    """Index where the name that ends at ``end`` starts (names are at most 100 characters)."""
    i = end
    lo = max(0, end - 100)
    while i > lo and text[i - 1] in _NAME_CHARS:
        i -= 1
    return i


def _name_strength(name: str) -> str | None:
    """``"strong"`` if a name always holds a secret, ``"weak"`` if only random values count."""
    low = name.lower().lstrip("-.")
    norm = low.replace("_", "").replace("-", "").replace(".", "")
    if not norm or norm in _NOT_SECRET_EXACT or norm.endswith(_NOT_SECRET_ENDINGS):
        return None
    if norm.endswith(_STRONG_ENDINGS):
        return "strong"
    if norm.endswith("pass"):
        # DB_PASS, SMTP_PASS; not Go's "--- PASS:" or BYPASS.
        if low.endswith(("_pass", "-pass", ".pass")):
            return "strong"
        raw = name.lstrip("-.")
        return "strong" if raw.endswith("Pass") and raw[-5:-4].islower() else None  # smtpPass
    if norm.endswith(("key", "keybase")):
        stem = low[: -len("_base")] if low.endswith("_base") else low
        k = len(stem) - 3
        raw_stem = name.lstrip("-.")[: len(stem)]
        boundary = (
            k == 0
            or stem[k - 1] in "_-."
            or (raw_stem[k] == "K" and raw_stem[k - 1].islower())  # camelCase apiKey
        )
        if not boundary:
            return "strong" if norm.endswith(_SECRET_KEY_NAMES) else None  # APIKEY, not monkey
        return "strong" if norm.endswith(_SECRET_KEY_NAMES) else "weak"
    return None


# A .netrc line: `machine <host> login <user> password <secret>`.
_NETRC_RE = re.compile(r"[ \t]{0,64}+(?:machine|default)\b")
_NETRC_INLINE_RE = re.compile(r"\bmachine [^\s]{1,253}+ login [^\s]{1,128}+ $")
_EOL_RE = re.compile(r"[ \t\r]{0,64}+(?:\n|\\n|\Z)")
_BLANK_HEAD_RE = re.compile(r"[ \t-]{0,512}+")


def _line_start(text: str, pos: int) -> int:
    """Start of the line holding ``pos`` (at most 512 characters back).

    A JSON-escaped ``\\n``, as in rendered tool input, also ends a line.
    """
    lo = max(0, pos - 512)
    nl = text.rfind("\n", lo, pos)
    esc = text.rfind("\\n", lo, pos)
    return max(nl + 1, esc + 2 if esc >= 0 else 0, lo)


def _assignment(text: str, m: re.Match[str]) -> _Span | None:
    """The value assigned to a secret-looking name, or None if it is not a literal secret."""
    kw_end = m.start("close")
    ns = _name_start(text, kw_end)
    if ns == kw_end or text.startswith(_MARKER_PREFIX, ns - len(_MARKER_PREFIX)):
        return None
    if text.startswith("://", ns - 3):
        return None  # user:password@ of a URL: _url_password names it
    name = text[ns:kw_end]
    strength = _name_strength(name)
    if strength is None:
        return None
    if strength == "weak" and text[max(0, ns - 7) : ns].lower() in ("public ", "public_"):
        return None  # "public key: ..." is meant to be shared
    group, value = next(
        (g, v) for g, v in zip(_VALUE_GROUPS, m.group(*_VALUE_GROUPS), strict=True) if v is not None
    )
    if strength == "weak" and len(value) < 16:
        return None  # every known token shape and every random-looking value is longer
    sep = m.group("sep")
    spaced_only = "=" not in sep and ":" not in sep
    ls = _line_start(text, ns)
    if spaced_only and not (
        name.startswith("-")
        or _NETRC_RE.match(text, ls, ns)
        or _NETRC_INLINE_RE.search(text, ls, ns)
        or (strength == "strong" and _random_looking(value, allow_hex=False))
    ):
        # Only `--password hunter2`, .netrc lines and `aws configure set <name> <random>`
        # use a bare space; "the token is ..." is prose.
        return None
    vs, ve = m.span(group)
    env_style = sep == "=" and m.group("close") == "" and _UPPER_NAME_RE.fullmatch(name) is not None

    kind = _value_kind(value, name, strength)
    if kind is not None:
        return (vs, ve, kind)
    # A quoted value is a literal: a leading * or # is part of it, not a mask or a comment.
    literal = value[1:] if group != "vbare" and value[:1] in "*#" else value
    if _is_placeholder(literal) or _looks_fake(value):
        return None
    if spaced_only and (value.startswith("-") or value.isalpha()):
        return None  # the next flag, or prose: "--password options", "--token --cut-at"
    if group == "vbare":
        if text[ve : ve + 1] in ("(", "[", "{"):
            return None  # a call or subscript: token = get_token()
        # `name: value` alone on its line is YAML, where a bare word is a value; a whole
        # line `name = value` is as often code (Python, Go) as INI, so it does not count.
        yaml_line = (
            sep.strip() == ":"
            and _BLANK_HEAD_RE.fullmatch(text, ls, ns) is not None
            and _EOL_RE.match(text, ve) is not None
        )
        if _looks_like_code(value, literal=env_style or spaced_only or yaml_line):
            return None
        if sep.strip() == ":" and not env_style:
            if value.endswith(":"):
                return None  # the next key: "token: str:" in a docstring
            type_like = _TYPE_LIKE if yaml_line else _CAMEL_RE
            if (
                type_like.fullmatch(value)
                and any(c.islower() for c in value)
                and not _mixed_random(value)
                and "-" not in name.lstrip("-")  # X-Auth-Token: is a header, not code
            ):
                return None  # a type annotation: token: Token, key: Ed25519PrivateKey
    elif not env_style and any(c.isspace() for c in value):
        return None  # a label or message: "password": "Enter your password"
    if not env_style and (
        _NAME_LIKE_RE.fullmatch(value)
        or (_SECRET_WORD_RE.search(value) and not any(c.isdigit() for c in value))
    ):
        return None  # a name or label: "phc_development_key", "X-Access-Token"
    if strength == "strong":
        return (vs, ve, "env-secret")
    if _random_looking(value, allow_hex=env_style):
        return (vs, ve, "high-entropy")
    return None


def _mixed_random(value: str) -> bool:
    """Letters of both cases in even measure and several digits: generated, not a type name
    (``FVE6SH8CLU2lirWmjLGu`` but not ``Ed25519PrivateKey`` or ``HTTPClient``)."""
    if len(value) < 16:
        return False
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    return digits >= 2 and 0.3 <= upper / max(1, upper + lower) <= 0.7


def _password_like(value: str) -> bool:
    """Digits and letters of both cases in one word (``Maple455.GYAUoF``): made up to be a
    password, where ``self.token`` or ``config.apiKey2`` are references."""
    digits = sum(c.isdigit() for c in value)
    return (
        digits >= 2
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def _value_kind(value: str, name: str, strength: str) -> str | None:
    """The specific kind of an assigned value: a known token shape or an AWS secret key."""
    if strength == "strong" and _AWS_SECRET_RE.fullmatch(value):
        norm = name.lower().replace("_", "")
        if "secretaccesskey" in norm or ("aws" in norm and "secret" in norm):
            return "aws-secret-key"
    return _shape_kind(value)


def _looks_like_code(value: str, *, literal: bool) -> bool:
    """An unquoted value that is a number, an expression or another variable, not a secret.

    ``literal`` says the context makes a bare word a literal (``NAME=value`` in a shell or
    .env file, a whole YAML line, a command-line flag), so plain words count as values there.
    """
    if value.isdigit() or (value.startswith("0x") and _HEX_RE.fullmatch(value)):
        return True
    if _DOTTED_RE.fullmatch(value) and not _password_like(value):
        return True  # self.token, process.env.TOKEN
    if literal:
        return False
    return _IDENT_RE.fullmatch(value) is not None and not any(c.isdigit() for c in value)


# --------------------------------------------------------------------------------------------
# Handlers for the anchored detectors
# --------------------------------------------------------------------------------------------
def _token_at(text: str, start: int, end: int, extra: str = "") -> _Span | None:
    """A bare token spanning [start, end) if it is bounded and has a known shape."""
    if start < 0 or not _bounded(text, start, end, extra):
        return None
    kind = _shape_kind(text[start:end])
    return (start, end, kind) if kind else None


def _prefixed(prefix_len: int) -> _Handler:
    """Handler for a match that starts ``prefix_len`` characters after the token starts."""

    def handle(text: str, m: re.Match[str]) -> _Span | None:
        return _token_at(text, m.start() - prefix_len, m.end())

    return handle


def _jwt(text: str, m: re.Match[str]) -> _Span | None:
    # Inside base64 blobs (images, signatures) "eyJ" follows other base64 characters; a
    # JWT follows a space, quote, "=" (cookie, query string) or ":".
    return _token_at(text, m.start() - 2, m.end(), extra="+/")


def _webhook(kind: str, group: str) -> _Handler:
    """Handler that hides the secret path ``group`` of a webhook URL."""

    def handle(text: str, m: re.Match[str]) -> _Span | None:
        s, e = m.span(group)
        if _looks_fake(text[s:e]) or (e < len(text) and text[e] in _TOKEN_CHARS):
            return None
        return (s, e, kind)

    return handle


def _bearer(text: str, m: re.Match[str]) -> _Span | None:
    """The credential after ``Bearer`` (any case) or ``Basic``."""
    # The Basic branch matches from its B, the bearer scanner from the e after it.
    word = m.start() if text[m.start() : m.start() + 1] == "B" else m.start() - 1
    if text[word - 1 : word].isalnum():
        return None  # part of a longer word
    s, e = m.span("bval")
    value = text[s:e].rstrip(".")
    e = s + len(value)
    if e < len(text) and text[e] in _TOKEN_CHARS:
        return None
    shape = _shape_kind(value)
    if shape:
        return (s, e, shape)
    if _is_placeholder(value):
        return None
    if text.startswith("Basic", word):
        # Basic credentials are base64 of "user:password"; prose after "Basic" is not.
        try:
            decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
        except (ValueError, binascii.Error):
            return None
        return (s, e, "bearer") if b":" in decoded else None
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if len(value) >= 16 and (has_digit or mixed) and len(set(value)) >= 8:
        return (s, e, "bearer")
    return None


def _xml_password(text: str, m: re.Match[str]) -> _Span | None:
    """The text of a ``<password>...</password>`` element (Maven settings.xml and the like)."""
    s, e = m.span("xval")
    value = text[s:e].strip()
    if _is_placeholder(value) or " " in value:
        return None
    return (s, e, _shape_kind(value) or "env-secret")


def _telegram(text: str, m: re.Match[str]) -> _Span | None:
    """A Telegram bot token: 8-10 digits of bot id, ``:AA``, 33 characters (``m`` at ``:``)."""
    start = m.start()
    while start > 0 and text[start - 1].isdigit() and m.start() - start <= 10:
        start -= 1
    if not 8 <= m.start() - start <= 10:
        return None
    return _token_at(text, start, m.end())


def _sas(text: str, m: re.Match[str]) -> _Span | None:
    """The ``sig=`` of an Azure shared access signature: a URL query with sv= and se=/sp=."""
    at = m.start() - 2  # m matched at the g of sig=
    if text[at - 1 : at] not in ("?", "&"):
        return None
    query = text[max(0, at - 600) : at]
    q = query.rfind("?")
    if q < 0 or "sv=" not in query[q:] or not ("se=" in query[q:] or "sp=" in query[q:]):
        return None
    s, e = m.span("sig")
    return None if _looks_fake(text[s:e]) else (s, e, "azure-sas")


# Commands whose -p/-a/-u flag takes a password, by how they take it.
_CLI_PW_ATTACHED = re.compile(r"\b(?:mysql\w{0,10}|mariadb[\w-]{0,10})(?=\s)")
_CLI_PW_SPACED = re.compile(
    r"\b(?:sshpass|(?:docker|podman|buildah|nerdctl|skopeo|oras|helm registry|az) login)\b"
)
_CLI_PW_W = re.compile(r"\bldap(?:search|modify|add|delete|passwd|compare|whoami)\b")
_CLI_PW_USER_PCT = re.compile(r"\b(?:smbclient|rpcclient|smbget)\b")
# openssl -passin/-passout/-pass pass:<password>
_OPENSSL_PASS_RE = re.compile(r"ass(?:in|out|word)? pass:")
_CLI_PW_A = re.compile(r"\b(?:redis-cli|keydb-cli|valkey-cli)\b")
_CLI_PW_U = re.compile(r"\b(?:curl|http|https|xh)\b")
_CLI_VALUE_RE = re.compile(r"""'([^'\n]{1,256}+)'|"([^"\n]{1,256}+)"|([^\s'"`;&|<>()]{1,256}+)""")


def _cli_password(text: str, m: re.Match[str]) -> _Span | None:
    """A password passed as a flag value to a command known to take one there."""
    flag = m.group("flag")
    if flag == "p" and (o := _OPENSSL_PASS_RE.match(text, m.end())):
        v = _CLI_VALUE_RE.match(text, o.end())
        if v is None or _is_placeholder(text[v.start() : v.end()]):
            return None
        return (*v.span(v.lastindex or 3), "cli-password")
    # The command is on the same line, and close: a long look back per flag would make a
    # text dense with flags slow.
    command = text[max(_line_start(text, m.start()), m.start() - 160) : m.start()]
    pos = m.end()
    if flag == "p":
        if text[pos : pos + 1] in (" ", "\t"):
            if not _CLI_PW_SPACED.search(command):
                return None
            pos += 1
        elif not _CLI_PW_ATTACHED.search(command) or text[pos : pos + 1] in ("", "\n"):
            return None
    elif flag == "a ":
        if not _CLI_PW_A.search(command):
            return None
    elif flag == "w ":
        if not _CLI_PW_W.search(command):
            return None
    elif flag == "U ":
        if not _CLI_PW_USER_PCT.search(command):
            return None
    elif not _CLI_PW_U.search(command):
        return None
    v = _CLI_VALUE_RE.match(text, pos)
    if v is None:
        return None
    g = v.lastindex or 3
    s, e = v.span(g)
    if flag[0] in "u-U":
        sep = text.find("%" if flag[0] == "U" else ":", s, e)
        if sep < 0:
            return None  # -u user: curl asks for the password
        s = sep + 1
    value = text[s:e]
    if not value or value.startswith("-") or _is_placeholder(value) or value.isdigit():
        return None
    if flag == "p" and text[m.end() : m.end() + 1] != " " and len(value) < 4:
        return None
    return (s, e, _shape_kind(value) or "cli-password")


_PEM_END_RE = re.compile(r"-----END[ A-Z0-9]{0,40}-----")
# Between the header and the END line: base64, whitespace, JSON-escaped \n, the prefixes of
# Read output (`    12→`), diffs (`+ `), quotes, our own trim markers ("[… 40 lines omitted …]")
# and the "Proc-Type: 4,ENCRYPTED" / "DEK-Info: ..." / "Comment: ..." headers.
_PEM_BODY_RE = re.compile(r"[A-Za-z0-9+/=\s\\:,.\-\"'\u2192\u2026\[\]>|;]{0,16384}")
# One line of a key seen line by line (no END line in reach, or the tail of a key whose header
# was cut away): a separator (newline or JSON-escaped \n), then the prefixes tools add, then
# base64, a header, a trim marker, an END line or nothing.
_PEM_SEP = r"(?:\r?\n|\\{1,4}r?\\{0,4}n)"
_PEM_PREFIX = r"[ \t]{0,16}+(?:\d{1,7}+(?:\u2192|\t))?(?:[+\->|][ \t]?)?[ \t]{0,16}+[\"']?"
_PEM_CONTENT = (
    r"(?:(?P<b64>[A-Za-z0-9+/=]{1,200}+)|[A-Za-z-]{1,20}: [^\n\\]{0,128}+"
    r"|\[\u2026[^\]\n]{0,60}\]|(?P<end>-----END[ A-Z0-9]{0,40}-----)|)"
)
_PEM_LINE_RE = re.compile(
    _PEM_SEP + _PEM_PREFIX + _PEM_CONTENT
    + r"(?: ?\u2026| \[\u2026continued\])?[\"']?,?[ \t]{0,16}+(?=\r?\n|\\|\Z)"
)
_PEM_TAIL_RE = re.compile(r"-----END (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
_PEM_SPLIT_RE = re.compile(_PEM_SEP)
_PEM_BODY_LINE_RE = re.compile(
    _PEM_PREFIX + r"(?:(?P<b64>[A-Za-z0-9+/=]{16,200}+)|\[\u2026[^\]\n]{0,60}\])"
    + r"(?: ?\u2026| \[\u2026continued\])?[\"']?,?[ \t]{0,16}+"
)
_PEM_KEY_MATERIAL_RE = re.compile(r"[A-Za-z0-9+/]{40}")


def _pem_lines_end(text: str, pos: int) -> int:
    """End of the run of key lines that starts at ``pos`` (the end of a header)."""
    end = pos
    for _ in range(1024):
        line = _PEM_LINE_RE.match(text, end)
        if line is None:
            break
        end = line.end()
        if line.group("end"):
            break
    return end


def _private_key(text: str, m: re.Match[str]) -> _Span | None:
    """The whole PEM block whose ``-----BEGIN ... PRIVATE KEY-----`` header ``m`` matched.

    The block is recognised through the prefixes tools put on lines (Read's line numbers,
    diff markers), JSON-escaped newlines and our own trim markers; without an END line in
    reach (truncated output), every following line that looks like key material is taken.
    """
    start = m.start() - len("-----")
    end = m.end()
    end_at = text.find("-----END", end, end + 16384)
    tail = _PEM_END_RE.match(text, end_at) if end_at >= 0 else None
    if (
        tail is not None
        and _PEM_BODY_RE.fullmatch(text, end, end_at)
        and text.find("-----BEGIN", end, end_at) < 0
    ):
        span_end = tail.end()
    else:
        span_end = _pem_lines_end(text, end)
    if _PEM_KEY_MATERIAL_RE.search(text, end, span_end) is None:
        return None  # only the header line, e.g. in documentation
    return (start, span_end, "private-key")


def _previous_line(text: str, end: int) -> tuple[int, int] | None:
    """(start, separator start) of the line that ends where the separator before ``end``
    begins, looking at most 320 characters back; None when no separator is in reach."""
    seps = list(_PEM_SPLIT_RE.finditer(text, max(0, end - 320), end))
    if not seps:
        return None
    last = seps[-1]
    before = list(_PEM_SPLIT_RE.finditer(text, max(0, last.start() - 320), last.start()))
    start = before[-1].end() if before else max(0, last.start() - 320)
    return start, last.start()


def _private_key_tail(text: str, spans: list[_Span]) -> None:
    """Scanner for the end of a key whose header is not in the text: the lines of key
    material just before an ``-----END ... PRIVATE KEY-----`` line (a key split over two
    chunks, ``tail key.pem``, a trimmed middle). Walks back one line at a time."""
    i = text.find("-----END ")
    while i >= 0:
        m = _PEM_TAIL_RE.match(text, i)
        if m is not None:
            start = i
            head = _PEM_SPLIT_RE.finditer(text, max(0, i - 64), i)
            seps = list(head)
            # END alone on its line (prefixes allowed), after whole lines of key material.
            if seps and not text[seps[-1].end() : i].strip(" \t\"'+->|0123456789\u2192"):
                end = seps[-1].end()
                for _ in range(1024):
                    prev = _previous_line(text, end)
                    if prev is None:
                        break
                    line = _PEM_BODY_LINE_RE.fullmatch(text, prev[0], prev[1])
                    if line is None:
                        break
                    if line.group("b64"):
                        start = prev[0]
                    end = prev[0]
            if start < i and _PEM_KEY_MATERIAL_RE.search(text, start, i):
                spans.append((start, m.end(), "private-key"))
        i = text.find("-----END ", i + 9)


_PRIVATE_OPEN_RE = re.compile(r"<(?i:private)>")
_PRIVATE_CLOSE_RE = re.compile(r"</(?i:private)>")


def _private_spans(text: str) -> list[_Span]:
    """Each ``<private>…</private>`` region, tags included; an unclosed one runs to the end."""
    spans: list[_Span] = []
    opened = _PRIVATE_OPEN_RE.search(text)
    while opened is not None:
        closed = _PRIVATE_CLOSE_RE.search(text, opened.end())
        end = closed.end() if closed else len(text)
        spans.append((opened.start(), end, "private"))
        opened = _PRIVATE_OPEN_RE.search(text, end)
    return spans


_USERINFO_RE = re.compile(r"""[^\s/?"'`<>\\()\[\]{},;|]{1,512}""")
# user:password@tcp(host:port)/db, a Go MySQL DSN: no scheme, the userinfo starts the value.
_DSN_USER_RE = re.compile(r"""[^\s/?"'`<>\\()\[\]{},;|]{1,256}""")


def _dsn_password(text: str, at: int) -> _Span | None:
    """The password of a Go DSN ``user:password@tcp(...)`` (``m`` matched at the ``@``)."""
    if not text.startswith(("tcp(", "unix(", "udp("), at + 1):
        return None
    us = at
    lo = max(0, at - 256)
    while us > lo and _DSN_USER_RE.fullmatch(text[us - 1]):
        us -= 1
    colon = text.find(":", us, at)
    if colon < 0 or colon + 1 >= at:
        return None
    password = text[colon + 1 : at]
    if _is_placeholder(password) and not _shape_kind(password):
        return None
    return (colon + 1, at, _shape_kind(password) or "url-password")


def _url_password(text: str, m: re.Match[str]) -> _Span | None:
    """The password of ``scheme://user:password@host``; ``m`` matched at the ``@``."""
    at = m.start()
    sch = text.rfind("://", max(0, at - 512), at)
    if sch <= 0 or not text[sch - 1].isalnum():
        return _dsn_password(text, at)
    userinfo_start = sch + 3
    if not _USERINFO_RE.fullmatch(text, userinfo_start, at):
        return None
    colon = text.find(":", userinfo_start, at)
    if colon < 0 or "@" in text[userinfo_start:colon]:
        return None
    ps, pe = colon + 1, at
    password = text[ps:pe]
    shape = _shape_kind(password)
    if shape:
        return (ps, pe, shape)
    low = password.lower()
    if (
        low in _PLACEHOLDER_WORDS
        or low in ("x-oauth-basic", "x-access-token")
        or low.startswith(_PLACEHOLDER_PREFIXES)
        or (password.startswith("$") and _SHELL_VAR_RE.match(password))
        or "REDACTED" in password
        or len(set(password)) == 1
    ):
        return None
    return (ps, pe, "url-password")


# --------------------------------------------------------------------------------------------
# Scanners: one pattern per anchor, `anchor(?=guard)(?:(?P<branch>...)|...)`. The guard is a
# lookahead on the next few characters, so the many anchor hits in ordinary text fail before
# the branches are tried. Rare anchors are located with str.find (memchr speed) and matched
# there; the others let re.search run its literal-prefix scan.
# --------------------------------------------------------------------------------------------
_Scan = Callable[[str, list[_Span]], None]
# A find-loop costs a Python iteration per anchor; past this many, re.finditer is cheaper.
_FIND_BUDGET = 512


def _scanner(
    anchor: str,
    guard: str,
    branches: Mapping[str, tuple[str, _Handler]],
    *,
    use_find: bool,
) -> _Scan:
    """Compile one anchored pattern; each branch's group name selects its handler."""
    body = "|".join(f"(?P<{name}>{rx})" for name, (rx, _) in branches.items())
    pattern = re.compile(re.escape(anchor) + (f"(?={guard})" if guard else "") + f"(?:{body})")
    handlers = {name: handler for name, (_, handler) in branches.items()}

    def find_scan(text: str, spans: list[_Span]) -> None:
        i = text.find(anchor)
        budget = _FIND_BUDGET
        while i >= 0:
            budget -= 1
            if budget == 0:  # dense anchors: let re scan the rest without Python in the loop
                search_scan(text, spans, i)
                return
            m = pattern.match(text, i)
            if m is not None:
                # A match always ends inside exactly one named branch, so lastgroup is set.
                span = handlers[m.lastgroup](text, m)  # type: ignore[index]
                if span is not None:
                    spans.append(span)
            i = text.find(anchor, i + 1)

    def search_scan(text: str, spans: list[_Span], pos: int = 0) -> None:
        first = pattern.search(text, pos)
        if first is None:
            return
        for m in pattern.finditer(text, first.start()):
            span = handlers[m.lastgroup](text, m)  # type: ignore[index]
            if span is not None:
                spans.append(span)

    return find_scan if use_find else search_scan


def _after(prefix: str, boundary: str = _B64URL) -> str:
    """Look-behinds: the text just matched ends with ``prefix`` (a fixed-width regex), and
    ``prefix`` does not continue a longer run of ``boundary`` characters, unless a URL escape
    (``%20``) ends that run. Rejecting runs here keeps dense anchors linear."""
    return (
        f"(?<={prefix})(?:(?<![{boundary}]{prefix})|(?<=%[0-9A-Fa-f][0-9A-Fa-f]{prefix}))"
    )


# A token body ends where token characters end; bodies are possessive so that a failed
# candidate is never re-scanned from a shorter length.
_END = r"(?![A-Za-z0-9_-])"


def _builtin_scanners() -> tuple[_Scan, ...]:
    b64 = _B64URL
    return (
        # K: TOKEN, KEY, Key; AKIA...; AGE-SECRET-KEY-1...
        _scanner(
            "K",
            "[EIe-]",
            {
                "vendor": ("-" + _after("(?:PMA|NRA)K-") + r"[A-Za-z0-9-]{27,60}+" + _END, _prefixed(3)),
                "env": (r"(?:(?<=TOK)EN|EY(?:_BASE)?|ey(?:Base)?)" + _TAIL_NS, _assignment),
                "aws": ("IA" + _after("AKIA", "A-Za-z0-9") + r"[A-Z0-9]{16}+" + _END, _prefixed(1)),
                "age": (
                    "EY-1"
                    + _after("AGE-SECRET-KEY-1")
                    + r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}+"
                    + _END,
                    _prefixed(11),
                ),
            },
            use_find=True,
        ),
        # k: token, key; sk-..., sk_live_..., rk_test_...; Slack and Discord webhook URLs.
        _scanner(
            "k",
            r"en|ey|-|_[lt]|r_p|\.com/|s/(?<=/webhooks/)",
            {
                "env": (r"(?:(?<=[Tt]ok)en|ey(?:_base)?)" + _TAIL, _assignment),
                "sk": ("-" + _after("sk-") + r"[A-Za-z0-9_-]{20,256}+" + _END, _prefixed(1)),
                "stripe": (
                    r"_(?:live|test)_"
                    r"(?<=[sr]k_live_|[sr]k_test_)(?<![A-Za-z0-9_-][sr]k_live_|[A-Za-z0-9_-][sr]k_test_)"
                    r"[A-Za-z0-9]{16,247}+" + _END,
                    _prefixed(1),
                ),
                "docker": (
                    "r_pat_" + _after("dckr_pat_") + r"[A-Za-z0-9_-]{27,128}+" + _END,
                    _prefixed(2),
                ),
                "slackhook": (
                    r"\.com/(?<=hooks\.slack\.com/)(?:services|workflows|triggers)/"
                    r"(?P<hook>[A-Za-z0-9_/-]{16,256}+)",
                    _webhook("slack-webhook", "hook"),
                ),
                "discordhook": (
                    r"s/(?<=/api/webhooks/)\d{5,25}+/(?P<dhook>[A-Za-z0-9_-]{40,128}+)",
                    _webhook("discord-webhook", "dhook"),
                ),
            },
            use_find=False,
        ),
        # S: SECRET, PASSWORD, PASSWD, PASSPHRASE, *_PASS; ASIA...; SG.; GOCSPX-; pypi-.
        _scanner(
            "S",
            r"""[ESIGP5=:"'\] \t?\\]""",
            {
                "env": (r"(?:ECRET|SWORD|SWD|SPHRASE|(?<=_PASS))" + _TAIL_NS, _assignment),
                "asia": (
                    "IA" + _after("ASIA", "A-Za-z0-9") + r"[A-Z0-9]{16}+" + _END,
                    _prefixed(1),
                ),
                "sendgrid": (
                    rf"(?<![{b64}]S)G\.[{b64}]{{22}}+\.[{b64}]{{43}}+" + _END,
                    _prefixed(0),
                ),
                "gocspx": ("PX-" + _after("GOCSPX-") + rf"[{b64}]{{28}}+" + _END, _prefixed(3)),
                "pypi": (
                    "5vcmc" + _after("pypi-AgEIcHlwaS5vcmc") + rf"[{b64}]{{50,512}}+" + _END,
                    _prefixed(14),
                ),
            },
            use_find=False,
        ),
        # secret, Secret.
        _scanner("cret", "", {"env": (_TAIL, _assignment)}, use_find=False),
        # ass of passphrase, smtp_pass, smtp-pass, smtpPass, keyPassphrase (lower case).
        _scanner(
            "ass",
            "",
            {"env": (r"(?<=[pP]ass)(?:phrase)?" + _TAIL, _assignment)},
            use_find=False,
        ),
        # W of *_PWD (MYSQL_PWD); PASSWORD is found by its S.
        _scanner("W", "D", {"env": ("(?<=PW)D" + _TAIL_NS, _assignment)}, use_find=True),
        # w: password, passwd, pwd, Password; whsec_...
        _scanner(
            "w",
            "[odh]",
            {
                "env": (r"(?:ord|(?<=[ps]w)d)" + _TAIL, _assignment),
                "xml": (r"ord>(?<=<password>)(?P<xval>[^<\n]{1,256}+)</", _xml_password),
                "whsec": (
                    rf"(?<![{b64}]w)hsec_[A-Za-z0-9+/=]{{24,128}}+(?![A-Za-z0-9_+/=-])",
                    _prefixed(0),
                ),
            },
            use_find=False,
        ),
        # B: Bearer / Basic credentials; -----BEGIN ... PRIVATE KEY-----.
        _scanner(
            "B",
            "[eaE]",
            {
                "bearer": (
                    r"(?<![A-Za-z0-9]B)asic[ \t]{1,4}+(?P<bval>[A-Za-z0-9._~+/=-]{8,4096}+)",
                    _bearer,
                ),
                "pem": (
                    r"EGIN (?<=-----BEGIN )(?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----",
                    _private_key,
                ),
            },
            use_find=True,
        ),
        # g: ghp_/gho_/ghu_/ghs_/ghr_, github_pat_, glpat- and the other GitLab prefixes.
        _scanner(
            "g",
            r"h[pousr]_|ithub_pat_|l[a-z]{1,5}-|=(?<=[?&]sig=)",
            {
                "sas": (r"=(?P<sig>[A-Za-z0-9%+/=]{20,256}+)", _sas),
                "gh": (
                    r"(?:h[pousr]_[A-Za-z0-9]{36,251}+|ithub_pat_[A-Za-z0-9_]{22,251}+)"
                    + _END,
                    _prefixed(0),
                ),
                "gl": (
                    r"l(?:pat|dt|rt|ptt|cbt|imt|soat|ft|oas|agent)-"
                    r"[A-Za-z0-9_-]{20,256}+(?:\.[A-Za-z0-9_-]{1,64}+){0,4}+" + _END,
                    _prefixed(0),
                ),
            },
            use_find=False,
        ),
        # x: Slack xoxb-/xoxp-/... and xapp- tokens.
        _scanner(
            "x",
            "[oaF]",
            {
                "atlassian": (
                    "FfGF0(?<=ATATT3xFfGF0)[A-Za-z0-9_=-]{90,300}+" + _END,
                    _prefixed(6),
                ),
                "slack": (
                    rf"(?<![{b64}]x)(?:ox[abposre]|app)-[A-Za-z0-9-]{{10,250}}+" + _END,
                    _prefixed(0),
                )
            },
            use_find=False,
        ),
        # J of eyJ: JSON Web Tokens.
        _scanner(
            "J",
            "",
            {
                "jwt": (
                    _after("eyJ", "+/" + _B64URL)
                    + r"[A-Za-z0-9_-]{8,4096}+\.eyJ[A-Za-z0-9_-]{8,8192}+\.[A-Za-z0-9_-]{0,4096}+"
                    + _END,
                    _jwt,
                )
            },
            use_find=True,
        ),
        # z of AIza: Google API keys.
        _scanner(
            "z",
            "",
            {"aiza": ("a" + _after("AIza") + r"[0-9A-Za-z_-]{35}+" + _END, _prefixed(2))},
            use_find=True,
        ),
        # @ of scheme://user:password@host.
        _scanner("@", "", {"url": (r"(?=[A-Za-z0-9\[])", _url_password)}, use_find=True),
        # Bearer / bearer / BEARER credentials.
        _scanner(
            "earer",
            "",
            {
                "bearer": (
                    r"(?<=[Bb]earer)[ \t]{1,4}+(?P<bval>[A-Za-z0-9._~+/=-]{8,4096}+)",
                    _bearer,
                ),
            },
            use_find=False,
        ),
        # _: npm_, hf_, shpat_, sbp_, glsa_, dop_v1_, lin_api_, sntrys_ tokens anywhere.
        _scanner(
            "_",
            r"[A-Za-z0-9_=+/-]{20}",
            {
                "u2": (r"(?<=hf_)[A-Za-z0-9]{34,40}+" + _END, _prefixed(2)),
                "u3": (r"(?<=npm_|sbp_)[A-Za-z0-9]{36,40}+" + _END, _prefixed(3)),
                "u4": (r"(?<=glsa_)[A-Za-z0-9_]{41}+" + _END, _prefixed(4)),
                "u5": (r"(?<=shpat_|shpss_|shpca_|shppa_)[a-fA-F0-9]{32}+" + _END, _prefixed(5)),
                "u6": (r"(?<=sntrys_|sntryu_)[A-Za-z0-9_=+/-]{60,300}+" + _END, _prefixed(6)),
                "u3b": (r"(?<=dop_|doo_|dor_)v1_[a-f0-9]{64}+" + _END, _prefixed(3)),
                "u3c": (r"(?<=lin_)api_[A-Za-z0-9]{40}+" + _END, _prefixed(3)),
            },
            use_find=False,
        ),
        # hvs. / hvb. / hvr.: Vault tokens; ya29.: Google access tokens; dapi: Databricks.
        _scanner(
            "vs.",
            "",
            {"vault": (r"(?<=hvs\.)[A-Za-z0-9_-]{24,256}+" + _END, _prefixed(1))},
            use_find=True,
        ),
        _scanner("ya29.", "", {"ya29": (r"[0-9A-Za-z_-]{30,2048}+" + _END, _prefixed(0))},
                 use_find=True),
        _scanner("dapi", "", {"dapi": (r"[a-f0-9]{32}+(?:-\d)?" + _END, _prefixed(0))},
                 use_find=True),
        # :AA of a Telegram bot token (<bot id>:AA<33 characters>).
        _scanner(":AA", "", {"telegram": (r"[A-Za-z0-9_-]{33}+" + _END, _telegram)}, use_find=True),
        # Passwords on command lines: -p, -a, -u after the commands that take them.
        _scanner(
            " -",
            r"p|a |u |w |U |-user[ =]",
            {"cli": (r"(?P<flag>p|a |u |w |U |-user[ =])", _cli_password)},
            use_find=False,
        ),
        _private_key_tail,
    )


# --------------------------------------------------------------------------------------------
# The redactor
# --------------------------------------------------------------------------------------------
_EMPTY_COUNTS: Mapping[str, int] = MappingProxyType({})


class Redactor:
    """Replace secrets in text by ``[REDACTED:<kind>]``; safe to share between threads."""

    def __init__(self, extra_patterns: Mapping[str, str] | None = None) -> None:
        """Build a redactor from the built-in detectors plus the user's own patterns.

        Parameters
        ----------
        extra_patterns : kind -> regular expression, from ``[redaction] patterns`` in the
            config file. A match is replaced by ``[REDACTED:<kind>]``; if the pattern has a
            capturing group, only the first group is replaced, so ``token=(\\w+)`` keeps
            ``token=``. Use ``(?i)`` for case-insensitive patterns. Extra patterns run on every
            chunk without a prefilter, so keep them simple (no nested unbounded repeats).

        Raises
        ------
        UsageError
            A kind is not a short name of letters, digits, ``_``, ``.`` or ``-``, or a
            pattern is not a valid regular expression.
        """
        self._scanners = _builtin_scanners()
        extras: list[tuple[str, re.Pattern[str]]] = []
        for kind, regex in (extra_patterns or {}).items():
            if not isinstance(kind, str) or not _KIND_RE.fullmatch(kind):
                raise UsageError(
                    f"redaction pattern name {kind!r} is not a kind name (letters, digits, "
                    "_ . -); rename it under [redaction] patterns in config.toml"
                )
            if not isinstance(regex, str):
                raise UsageError(
                    f"redaction pattern {kind!r} must be a string regex, not {type(regex).__name__}; "
                    "fix it under [redaction] patterns in config.toml"
                )
            try:
                extras.append((kind, re.compile(regex)))
            except re.error as exc:
                raise UsageError(
                    f"redaction pattern {kind!r} is not a valid regex ({exc}): {regex!r}; "
                    "fix it under [redaction] patterns in config.toml"
                ) from exc
        self._extras = tuple(extras)

    def spans(self, text: str) -> list[_Span]:
        """The merged (start, end, kind) spans that ``redact`` would replace, in order."""
        spans: list[_Span] = []
        for scan in self._scanners:
            scan(text, spans)
        for kind, pattern in self._extras:
            for m in pattern.finditer(text):
                # Only the first group if it took part in the match, else the whole match.
                s, e = m.span(1) if pattern.groups and m.start(1) >= 0 else m.span()
                if e > s:
                    spans.append((s, e, kind))
        if spans and _MARKER_PREFIX in text:
            spans = _drop_marked(text, spans)
        # Not subject to the marker rule: a region stored before this rule may hold markers.
        spans += _private_spans(text)
        return _merge(spans) if spans else spans

    def redact(self, text: str) -> Redaction:
        """Return ``text`` with every secret replaced, and the count per kind."""
        spans = self.spans(text)
        if not spans:
            return Redaction(text, _EMPTY_COUNTS)
        parts: list[str] = []
        counts: dict[str, int] = {}
        pos = 0
        for start, end, kind in spans:
            parts.append(text[pos:start])
            parts.append(marker(kind))
            counts[kind] = counts.get(kind, 0) + 1
            pos = end
        parts.append(text[pos:])
        return Redaction("".join(parts), MappingProxyType(counts))


def _drop_marked(text: str, spans: list[_Span]) -> list[_Span]:
    """Spans that do not touch an existing ``[REDACTED:kind]`` marker (keeps redact idempotent)."""
    starts: list[int] = []
    ends: list[int] = []
    i = text.find(_MARKER_PREFIX)
    while i >= 0:
        j = text.find("]", i, i + len(_MARKER_PREFIX) + 65)
        if j >= 0 and _KIND_RE.fullmatch(text, i + len(_MARKER_PREFIX), j):
            starts.append(i)
            ends.append(j + 1)
        i = text.find(_MARKER_PREFIX, i + 1)
    if not starts:
        return spans
    kept = []
    for span in spans:
        k = bisect.bisect_right(ends, span[0])  # first marker ending after the span starts
        if k == len(starts) or starts[k] >= span[1]:
            kept.append(span)
    return kept


def _merge(spans: list[_Span]) -> list[_Span]:
    """Sort spans and merge overlapping ones; the longest span of a group names the kind."""
    spans.sort(key=lambda s: (s[0], -s[1]))
    out: list[_Span] = []
    cur_s, cur_e, cur_k = spans[0]
    best = cur_e - cur_s
    for s, e, k in spans[1:]:
        if s < cur_e:
            if e - s > best:
                best, cur_k = e - s, k
            cur_e = max(cur_e, e)
            continue
        out.append((cur_s, cur_e, cur_k))
        cur_s, cur_e, cur_k, best = s, e, k, e - s
    out.append((cur_s, cur_e, cur_k))
    return out


@functools.cache
def default_redactor() -> Redactor:
    """The redactor with only the built-in detectors (built once per process)."""
    return Redactor()
