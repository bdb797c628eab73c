"""Finding the engine from HOME alone, as `toolgate mcp-bridge` does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toolgate import EngineNotFound, Toolgate, locate
from toolgate._discovery import data_dir

from .conftest import Daemon


def test_home_alone_finds_the_running_engine(daemon: Daemon) -> None:
    assert set(k for k in os.environ if k.startswith(("XDG_", "TOOLGATE_"))) == set()
    found = locate()
    assert found.source == "discovery"
    assert str(found.agent_socket) == daemon.socket
    with Toolgate() as tg:
        assert tg.server_info["serverInfo"]["name"] == "toolgate"


def test_data_dir_follows_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k in ("TOOLGATE_DATA_DIR", "TOOLGATE_CONFIG", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data_dir() == tmp_path / ".local/share/toolgate"
    cfg = tmp_path / ".config/toolgate/config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('data_dir = "/srv/tg"  # here\n[policy]\ndata_dir = "/not/this"\n')
    assert data_dir() == Path("/srv/tg")
    monkeypatch.setenv("TOOLGATE_DATA_DIR", str(tmp_path / "given"))
    assert data_dir() == tmp_path / "given"


def test_a_stale_discovery_file_is_not_believed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "data"
    d.mkdir()
    (d / "engine.json").write_text(json.dumps({"pid": 2**22 + 1, "agent_socket": str(d / "gone.sock")}))
    monkeypatch.setenv("TOOLGATE_DATA_DIR", str(d))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("TOOLGATE_SOCKET", raising=False)
    found = locate()
    assert found.source == "default"
    assert found.agent_socket == tmp_path / "run/toolgate/agent.sock"
    with pytest.raises(EngineNotFound, match="no toolgate engine is listening on .*agent.sock"):
        Toolgate()
