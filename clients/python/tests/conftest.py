"""A real `toolgate serve` for the tests: its own temp HOME, runtime dir
and config, found by the package from HOME alone, as an MCP client's
stripped environment would leave it.

The binary is $TOOLGATE_BIN, else the workspace's debug build. Without
one the tests are skipped, except under CI=true, where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

# PraisonAI's telemetry stays off in tests (no network calls).
os.environ.setdefault("PRAISONAI_TELEMETRY_DISABLED", "true")

REPO = Path(__file__).resolve().parents[3]
T = TypeVar("T")

CONFIG = """\
allowed_tools = ["*"]

[[policy.rules]]
tool = "wipe_*"
verdict = "deny"
reason = "wiping is never done by agents"

[tools.delete_record]
policy = "ask"

[tools.slow_delete]
policy = "ask"
"""


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 20.0) -> T:
    """Polls ``probe`` until it gives a value, failing after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def need(module: str) -> Any:
    """Imports ``module``: a test dependency. Missing, it skips the tests
    that need it, except under CI=true, where it fails them."""
    if os.environ.get("CI") == "true":
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module)


def _binary() -> Path:
    given = os.environ.get("TOOLGATE_BIN")
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    path = Path(given) if given else Path(target) / "debug" / "toolgate"
    if not path.is_file():
        why = f"no toolgate binary at {path}: build it with `cargo build -p toolgate --bin toolgate` or set TOOLGATE_BIN"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return path


class Daemon:
    """The running `toolgate serve`, and its CLI on the same dirs."""

    def __init__(self, binary: Path, root: Path) -> None:
        self.binary, self.root = binary, root
        self.home = root / "home"
        runtime = root / "run"
        (self.home / ".config" / "toolgate").mkdir(parents=True)
        runtime.mkdir(mode=0o700)
        (self.home / ".config" / "toolgate" / "config.toml").write_text(CONFIG)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            # Elsewhere than the data dir, so only the discovery file
            # leads the package to the socket.
            "XDG_RUNTIME_DIR": str(runtime),
            "TOOLGATE_LOG": "warn",
        }
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--http-port", "0"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.socket = self._wait_ready()

    def _wait_ready(self) -> str:
        found: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if line.startswith("toolgate") and "serving MCP on unix:" in line:
                    found.append(line.split("unix:", 1)[1].strip())
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30) or not found:
            self.proc.kill()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"toolgate serve did not come up: {err}")
        return found[0]

    def cli(self, *args: str) -> str:
        out = subprocess.run(
            [str(self.binary), *args], env=self.env, capture_output=True, text=True, timeout=30
        )
        if out.returncode != 0:
            raise AssertionError(f"toolgate {' '.join(args)} failed: {out.stderr}{out.stdout}")
        return out.stdout

    def approvals(self) -> list[dict[str, Any]]:
        return list(json.loads(self.cli("approvals", "--json") or "[]"))

    def audit(self) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in self.cli("audit", "--json", "--limit", "200").splitlines() if line.strip()]
        for row in rows:
            row["caller"] = json.loads(row["caller"]) if isinstance(row.get("caller"), str) else row.get("caller")
        return rows

    def audit_row(self, tool: str, **want: Any) -> dict[str, Any]:
        """Waits for the audit row of ``tool`` with the fields in ``want``."""

        def probe() -> dict[str, Any] | None:
            for row in reversed(self.audit()):
                if row["tool"] == tool and all(row.get(k) == v for k, v in want.items()):
                    return row
            return None

        return wait_for(f"an audit row of {tool} with {want}", probe)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    binary = _binary()
    root = Path(tempfile.mkdtemp(prefix="toolgate-py-"))
    saved = dict(os.environ)
    d = Daemon(binary, root)
    # This process is the agent: HOME alone, as MCP clients leave it.
    for k in list(os.environ):
        if k.startswith(("XDG_", "TOOLGATE_")):
            del os.environ[k]
    os.environ["HOME"] = str(d.home)
    try:
        yield d
    finally:
        os.environ.clear()
        os.environ.update(saved)
        d.stop()
        shutil.rmtree(root, ignore_errors=True)
