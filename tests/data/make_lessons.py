"""Write the repeated-error sample transcripts under tests/data/lessons/.

The shared transcripts rarely repeat an error across sessions, so these imitate Claude Code's
JSONL (same record shapes as make_samples.py) for situations lessons exist for: an error
solved in one session and met again a week later (with different temporary paths), an error
that recurs within a session after being fixed in an earlier turn, one never solved, and a
look-alike that must not match (another module missing). Run: python tests/data/make_lessons.py
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).parent / "lessons"
SHOP = "/home/dev/shop-web"
INFRA = "/home/dev/infra"
L1 = "44444444-bbbb-4ccc-8ddd-000000000001"
L2 = "44444444-bbbb-4ccc-8ddd-000000000002"
L3 = "44444444-bbbb-4ccc-8ddd-000000000003"


class Writer:
    def __init__(self, session: str, cwd: str, start: datetime) -> None:
        self.session, self.cwd, self.t = session, cwd, start
        self.lines: list[dict] = []
        self.parent: str | None = None
        self.n = 0

    def _env(self, kind: str, **extra) -> dict:
        self.n += 1
        self.t += timedelta(seconds=25)
        uid = f"{self.session[:8]}-main-{self.n:04d}"
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
               "cwd": self.cwd, "sessionId": self.session, "version": "2.1.42",
               "gitBranch": "main", "type": kind, "uuid": uid,
               "timestamp": self.t.strftime("%Y-%m-%dT%H:%M:%S.000Z")}
        rec.update(extra)
        self.parent = uid
        self.lines.append(rec)
        return rec

    def user(self, text: str) -> None:
        self._env("user", message={"role": "user", "content": text})

    def say(self, text: str) -> None:
        self._env("assistant", message={"id": f"msg_m{self.n}", "role": "assistant",
                  "model": "claude-opus-4-5", "content": [{"type": "text", "text": text}]})

    def tool(self, name: str, inp: dict, result: str, is_error: bool = False) -> None:
        tid = f"toolu_{self.session[:4]}{self.session[-2:]}{self.n:04d}"
        self._env("assistant", message={"id": f"msg_u{self.n}", "role": "assistant",
                  "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]})
        block = {"type": "tool_result", "tool_use_id": tid, "content": result}
        if is_error:
            block["is_error"] = True
        self._env("user", message={"role": "user", "content": [block]})

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in self.lines))


def import_error(tmp: str, module: str = "shop") -> str:
    return (f"ImportError while loading conftest '{tmp}/tests/conftest.py'.\n"
            f"tests/conftest.py:3: in <module>\n    from {module}.models import Cart\n"
            f"E   ModuleNotFoundError: No module named '{module}'\nExit code 4")


def session_one() -> None:
    w = Writer(L1, SHOP, datetime(2026, 4, 6, 14, 0, tzinfo=timezone.utc))
    w.user("Run the test suite and fix whatever is broken, then build the frontend.")
    w.tool("Bash", {"command": "pytest -q", "description": "Run tests"},
           import_error("/tmp/pytest-of-dev/pytest-12"), is_error=True)
    w.say("pytest cannot import the `shop` package: it is not installed in this virtualenv. "
          "I'll install the project in editable mode.")
    w.tool("Bash", {"command": "pip install -e '.[test]'"},
           "Successfully installed shop-web-0.4.0")
    w.tool("Bash", {"command": "pytest -q"}, "42 passed in 1.31s")
    w.tool("Bash", {"command": "npm run build"},
           "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
           "npm ERR! Found: react@18.2.0\nnpm ERR! Could not resolve dependency:\n"
           "npm ERR! peer react@\"^17.0.0\" from react-datepicker@4.1.0\nExit code 1",
           is_error=True)
    w.say("react-datepicker 4.1 only supports React 17. Version 4.25 supports React 18, so I'll "
          "bump it in package.json.")
    w.tool("Edit", {"file_path": f"{SHOP}/package.json", "old_string": "\"4.1.0\"",
                    "new_string": "\"^4.25.0\""},
           f"The file {SHOP}/package.json has been updated successfully.")
    w.tool("Bash", {"command": "npm install"}, "added 3 packages, changed 1 package in 4s")
    w.tool("Bash", {"command": "npm run build"}, "vite v5.2.0 building for production...\n"
           "✓ 212 modules transformed.\n✓ built in 3.84s")
    w.tool("Bash", {"command": "git commit -am 'Bump react-datepicker for React 18'"},
           "[main 3f9c2a1] Bump react-datepicker for React 18\n 2 files changed, 9 insertions(+)")
    w.user("Also start the database container.")
    w.tool("Bash", {"command": "docker compose up -d db"},
           "Error response from daemon: Ports are not available: exposing port TCP "
           "0.0.0.0:5432 -> 0.0.0.0:0: listen tcp 0.0.0.0:5432: bind: address already in use\n"
           "Exit code 1", is_error=True)
    w.say("Port 5432 is taken by another Postgres on this machine; I'll leave that to you.")
    w.write(ROOT / "-home-dev-shop-web" / f"{L1}.jsonl")


def session_two() -> None:
    w = Writer(L2, SHOP, datetime(2026, 4, 14, 9, 30, tzinfo=timezone.utc))
    w.user("Add a discount field to the cart and make sure the tests and mypy pass.")
    w.tool("Bash", {"command": "pytest -q tests/test_cart.py"},
           import_error("/tmp/pytest-of-dev/pytest-31"), is_error=True)
    w.tool("Bash", {"command": "pip install -e ."}, "Successfully installed shop-web-0.4.1")
    w.tool("Bash", {"command": "pytest -q tests/test_cart.py"}, "9 passed in 0.40s")
    w.tool("Bash", {"command": "mypy shop"},
           "shop/cart.py:88: error: Incompatible return value type (got \"Optional[Decimal]\", "
           "expected \"Decimal\")  [return-value]\nFound 1 error in 1 file (checked 14 source "
           "files)\nExit code 1", is_error=True)
    w.say("`discount()` can return None. I'll default it to Decimal(0) instead.")
    w.tool("Edit", {"file_path": f"{SHOP}/shop/cart.py", "old_string": "return self._discount",
                    "new_string": "return self._discount or Decimal(0)"},
           f"The file {SHOP}/shop/cart.py has been updated successfully.")
    w.tool("Bash", {"command": "mypy shop"}, "Success: no issues found in 14 source files")
    w.user("Now add the same discount to orders.")
    w.tool("Edit", {"file_path": f"{SHOP}/shop/orders.py", "old_string": "total",
                    "new_string": "total - self.discount"},
           f"The file {SHOP}/shop/orders.py has been updated successfully.")
    w.tool("Bash", {"command": "mypy shop"},
           "shop/orders.py:12: error: Incompatible return value type (got \"Optional[Decimal]\", "
           "expected \"Decimal\")  [return-value]\nFound 1 error in 1 file (checked 14 source "
           "files)\nExit code 1", is_error=True)
    w.tool("Edit", {"file_path": f"{SHOP}/shop/orders.py", "old_string": "self.discount",
                    "new_string": "(self.discount or Decimal(0))"},
           f"The file {SHOP}/shop/orders.py has been updated successfully.")
    w.tool("Bash", {"command": "mypy shop"}, "Success: no issues found in 14 source files")
    w.tool("Bash", {"command": "docker compose up -d db"},
           "Error response from daemon: Ports are not available: exposing port TCP "
           "0.0.0.0:5432 -> 0.0.0.0:0: listen tcp 0.0.0.0:5432: bind: address already in use\n"
           "Exit code 1", is_error=True)
    w.write(ROOT / "-home-dev-shop-web" / f"{L2}.jsonl")


def session_three() -> None:
    w = Writer(L3, INFRA, datetime(2026, 4, 20, 16, 0, tzinfo=timezone.utc))
    w.user("Plan the terraform change for the new bucket and run the lambda tests.")
    w.tool("Bash", {"command": "terraform plan -out tf.plan"},
           "Error: Inconsistent dependency lock file\n\nThe following dependency selections "
           "recorded in the lock file are inconsistent with the current configuration:\n"
           "  - provider registry.terraform.io/hashicorp/aws: locked version selection 5.31.0 "
           "doesn't match the updated version constraints \"~> 5.40\"\nExit code 1",
           is_error=True)
    w.say("The provider constraint was raised without updating the lock file; "
          "`terraform init -upgrade` refreshes it.")
    w.tool("Bash", {"command": "terraform init -upgrade"},
           "Terraform has been successfully initialized!")
    w.tool("Bash", {"command": "terraform plan -out tf.plan"},
           "Plan: 1 to add, 0 to change, 0 to destroy.")
    w.tool("Bash", {"command": "pytest -q lambdas"},
           import_error("/tmp/pytest-of-dev/pytest-40", module="boto3"), is_error=True)
    w.tool("Bash", {"command": "pip install boto3"}, "Successfully installed boto3-1.34.0")
    w.tool("Bash", {"command": "pytest -q lambdas"}, "5 passed in 0.91s")
    w.write(ROOT / "-home-dev-infra" / f"{L3}.jsonl")


if __name__ == "__main__":
    session_one()
    session_two()
    session_three()
