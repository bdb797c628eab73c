"""Finding the running engine the way ``toolgate mcp-bridge`` does.

MCP clients start their servers (and so the code of agents they host) with
a stripped environment, often HOME alone, so the engine is found from the
data dir, which HOME always gives: the engine that owns it writes
``<data dir>/engine.json`` once its sockets listen. A file left by a killed
engine is stale; it is believed only when its pid is alive and its socket
accepts a connection. Without a live one, the default socket in the
runtime dir is used, as the CLI does.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import EngineNotFound

DISCOVERY_FILE = "engine.json"


@dataclass(frozen=True)
class Located:
    """Where the engine's agent socket is, and how it was found."""

    agent_socket: Path
    #: ``"flag"`` (given, or ``TOOLGATE_SOCKET``), ``"discovery"`` (the data
    #: dir's ``engine.json`` of a live engine) or ``"default"``.
    source: str
    data_dir: Path


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var, "")
    # The XDG spec says to ignore a relative path.
    return Path(value) if value and os.path.isabs(value) else _home() / fallback


def config_file() -> Path:
    """``$TOOLGATE_CONFIG``, else ``~/.config/toolgate/config.toml``."""
    given = os.environ.get("TOOLGATE_CONFIG")
    return Path(given) if given else _xdg("XDG_CONFIG_HOME", ".config") / "toolgate" / "config.toml"


_DATA_DIR_LINE = re.compile(r"""^\s*data_dir\s*=\s*(?:"([^"]*)"|'([^']*)')\s*(?:#.*)?$""")


def _config_data_dir(path: Path) -> Path | None:
    """The config's top-level ``data_dir``, if it sets one.

    Only the lines before the first table header are top-level, so a plain
    line scan reads it on Python 3.10 too (no ``tomllib`` there).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.lstrip().startswith("["):
            break
        m = _DATA_DIR_LINE.match(line)
        if m:
            raw = m.group(1) if m.group(1) is not None else m.group(2)
            return Path(os.path.expanduser(raw)) if raw.startswith("~") else Path(raw)
    return None


def data_dir() -> Path:
    """The data dir as the CLI decides it: ``$TOOLGATE_DATA_DIR``, else the
    config's ``data_dir``, else ``$XDG_DATA_HOME/toolgate`` (which is
    ``~/.local/share/toolgate``)."""
    given = os.environ.get("TOOLGATE_DATA_DIR")
    if given:
        return Path(given)
    return _config_data_dir(config_file()) or _xdg("XDG_DATA_HOME", ".local/share") / "toolgate"


def _runtime_base() -> Path | None:
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg)
    uid = os.getuid()
    d = Path("/run/user") / str(uid)
    try:
        st = d.lstat()
    except OSError:
        return None
    private = st.st_mode & 0o022 == 0
    return d if stat.S_ISDIR(st.st_mode) and st.st_uid == uid and private else None


def default_socket(data: Path) -> Path:
    """``<runtime dir>/toolgate/agent.sock``, or the data dir's without one."""
    base = _runtime_base()
    return (base / "toolgate" if base else data) / "agent.sock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        # Alive, but not ours: an engine we may use is ours.
        return False
    return True


def _accepts(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except OSError:
        return False
    finally:
        s.close()
    return True


def read_engine(data: Path) -> dict[str, object] | None:
    """The data dir's discovery file, if there is one and it is ours.

    Raises:
        EngineNotFound: the file exists but is unreadable or someone
            else's (a file planted by another user is never followed).
    """
    path = data / DISCOVERY_FILE
    try:
        st = path.stat()
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise EngineNotFound(f"engine discovery file {path}: {e}") from e
    if st.st_uid != os.getuid():
        raise EngineNotFound(
            f"engine discovery file {path} belongs to uid {st.st_uid}, not to us; ignoring it"
        )
    try:
        info = json.loads(raw)
    except ValueError as e:
        raise EngineNotFound(f"engine discovery file {path} is unreadable: {e}") from e
    if not isinstance(info, dict):
        raise EngineNotFound(f"engine discovery file {path} is unreadable: not an object")
    return info


def find_live(data: Path) -> Path | None:
    """The agent socket of the live engine owning ``data``, if there is one."""
    info = read_engine(data)
    if info is None:
        return None
    pid, sock = info.get("pid"), info.get("agent_socket")
    if not isinstance(pid, int) or not isinstance(sock, str):
        return None
    if not _pid_alive(pid) or not _accepts(Path(sock)):
        return None
    return Path(sock)


def locate(socket_path: str | os.PathLike[str] | None = None) -> Located:
    """Where to reach the engine: an explicit socket (or
    ``$TOOLGATE_SOCKET``) wins, else the discovery file of a live engine,
    else the default socket."""
    data = data_dir()
    given = socket_path or os.environ.get("TOOLGATE_SOCKET")
    if given:
        return Located(Path(given), "flag", data)
    live = find_live(data)
    if live is not None:
        return Located(live, "discovery", data)
    return Located(default_socket(data), "default", data)
