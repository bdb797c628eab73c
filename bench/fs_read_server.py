"""A minimal, ungoverned MCP-ish server for bench/socket.rs.

It answers the JSON-RPC lines an MCP client sends (initialize, ping,
tools/list, tools/call of `fs_read`) on a Unix socket by reading the file
itself: no validation, no policy, no audit. It is the baseline for
toolgate's governed `fs_read` round trip, with the same client.

Standard library only. One thread per connection, blocking I/O, so a call
costs one read(2), the file's open/read and one write(2).

Usage: python3 fs_read_server.py SOCKET ROOT
"""

import json
import os
import socket
import sys
import threading

TOOL = {
    "name": "fs_read",
    "description": "Read a text file under the root.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "max_bytes": {"type": "integer"},
            "offset": {"type": "integer"},
        },
        "required": ["path"],
    },
}


def fs_read(root, args):
    path = os.path.join(root, args["path"])
    offset = int(args.get("offset") or 0)
    max_bytes = int(args.get("max_bytes") or 131072)
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(max_bytes)
    return {"content": [{"type": "text", "text": data.decode("utf-8")}], "isError": False}


def answer(root, msg):
    method = msg.get("method")
    if method == "initialize":
        return {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "py-fs-read", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        params = msg["params"]
        if params.get("name") != "fs_read":
            raise KeyError(params.get("name"))
        return fs_read(root, params.get("arguments") or {})
    raise KeyError(method)


def serve(conn, root):
    with conn, conn.makefile("rb") as rd:
        for line in rd:
            msg = json.loads(line)
            if "id" not in msg:
                continue
            try:
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(root, msg)}
            except Exception as e:  # the bench never sends a bad call
                reply = {"jsonrpc": "2.0", "id": msg["id"],
                         "error": {"code": -32603, "message": str(e)}}
            conn.sendall(json.dumps(reply, separators=(",", ":")).encode() + b"\n")


def main():
    path, root = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, root), daemon=True).start()


if __name__ == "__main__":
    main()
