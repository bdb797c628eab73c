"""examples/praisonai/agent.py runs as documented (its no-LLM part): the
bridge lists toolgate's tools, and the agent's own functions are governed,
one of them waiting for a person."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import REPO, Daemon, wait_for


def test_the_praisonai_example_runs_without_an_llm(daemon: Daemon, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "toolgate").symlink_to(daemon.binary)
    env = {
        # What an MCP client would leave: HOME and PATH.
        "HOME": str(daemon.home),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": str(REPO / "clients" / "python" / "src"),
        "PRAISONAI_TELEMETRY_DISABLED": "true",
    }
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "examples" / "praisonai" / "agent.py")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        req = wait_for(
            "the example's approval request",
            lambda: next((r for r in daemon.approvals() if r["tool"] == "delete_invoice"), None),
            timeout=60,
        )
        daemon.cli("approve", str(req["id"]))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "found by discovery" in out
    assert "toolgate's tools through the bridge" in out and "fs_read" in out
    assert "120 CHF = 135.60 USD" in out, out
    assert "invoice 42 deleted" in out, out
    row = daemon.audit_row("delete_invoice", outcome="ok")
    assert row["caller"]["agent_id"] == "bookkeeper"
    assert "integer 42" in row["notes"]
