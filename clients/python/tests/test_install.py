"""`pip install ./clients/python` works, offline, with what the venv has."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]


def test_pip_installs_the_package_offline(tmp_path: Path) -> None:
    target = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-index", "--no-build-isolation", "--target", str(target), str(PACKAGE)],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert (target / "toolgate" / "py.typed").is_file(), "the typing marker is installed"
    probe = subprocess.run(
        [sys.executable, "-c", "import toolgate; print(toolgate.Toolgate.__name__, toolgate.__file__)"],
        capture_output=True, text=True, env={"PYTHONPATH": str(target)}, timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split()[0] == "Toolgate"
    assert str(target) in probe.stdout, "imported from the installed copy"
