#!/usr/bin/env python3
"""textkit's tools: one program, the tool named by its first argument.

toolgate writes the call's arguments as one JSON object on stdin; what this
prints on stdout is the result: a ToolResult object, or plain text.
"""

import json
import re
import sys


def word_count(args):
    text = args["text"]
    counts = {
        "words": len(text.split()),
        "lines": len(text.splitlines()),
        "characters": len(text),
    }
    # A ToolResult: text for the model, the same as structured content.
    return {
        "content": [{"type": "text", "text": json.dumps(counts)}],
        "structuredContent": counts,
    }


def slugify(args):
    words = re.findall(r"[a-z0-9]+", args["title"].lower())
    return "-".join(words)  # plain text is a result too


TOOLS = {"word_count": word_count, "slugify": slugify}


def main():
    args = json.load(sys.stdin)
    out = TOOLS[sys.argv[1]](args)
    print(out if isinstance(out, str) else json.dumps(out))


if __name__ == "__main__":
    main()
