#!/usr/bin/env python3
"""textkit's hooks: the hook named by the first argument.

A hook reads one JSON object on stdin ({"hook", "tool", "arguments" or
"result", "caller", "session"}) and prints its decision: {"block": reason},
{"arguments": {...}}, {"result": {...}}, or nothing to let the call through.
"""

import json
import re
import sys

API_KEY = re.compile(r"\b(sk-[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{30,})")
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


def no_api_keys(event):
    if API_KEY.search(json.dumps(event["arguments"])):
        return {"block": "the arguments hold what looks like an API key; leave it out"}
    return {}


def redact_emails(event):
    result = event["result"]
    changed = False
    for part in result.get("content", []):
        if part.get("type") == "text" and EMAIL.search(part["text"]):
            part["text"] = EMAIL.sub("[e-mail removed]", part["text"])
            changed = True
    if changed:
        result.pop("structuredContent", None)
        return {"result": result}
    return {}


HOOKS = {"no-api-keys": no_api_keys, "redact-emails": redact_emails}


def main():
    event = json.load(sys.stdin)
    print(json.dumps(HOOKS[sys.argv[1]](event)))


if __name__ == "__main__":
    main()
