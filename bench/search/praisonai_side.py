#!/usr/bin/env python3
"""PraisonAI's side of the tool-search comparison.

Runs the real ``praisonaiagents`` package (pinned in requirements.txt; its
``praisonaiagents/tools/tool_search.py`` holds ``BM25ToolSearcher`` and
``search_catalog``) on the fixture in tests/fixtures/search/. See README.md in
this directory for setup; every mode prints JSON on stdout.

  python bench/search/praisonai_side.py check
      Fails loudly unless the fixture is sound: every query's expected tool is
      in the catalog, registry names are unique, enough tools and queries.

  python bench/search/praisonai_side.py relevance
      search_catalog(defs, query, 3) for every query; top-1 and top-3 hit rates.

  python bench/search/praisonai_side.py speed [--repeat N] [--rebuild-repeat N]
      On the 10,000-tool catalog (rule below): index build, "adding" one
      100-tool server (PraisonAI has no incremental add, so: a rebuild with
      10,100 tools), and query latency p50/p99 both on a built index
      (searcher.search(q, 5)) and through search_catalog(defs, q, 5), which is
      PraisonAI's real per-call path: it rebuilds the index on every call.

  python bench/search/praisonai_side.py dump PATH [--added PATH]
      Writes the 10,000-tool catalog (and, with --added, the extra 100-tool
      server alone) in the fixture's format, for the Rust bench to read.

The 10,000-tool catalog (``scaled_catalog``), so that any implementation can
build the very same one:
  1. Start with the fixture's servers, in file order (sorted by name), names
     unchanged: round 0.
  2. For round r = 1, 2, ...: append a copy of every fixture server, in the same
     order, renamed ``<name>_<r>`` (e.g. ``github_7``), tools unchanged.
  3. Stop as soon as the total reaches 10,000 tools; the last server appended
     keeps only its first tools, so that the total is exactly 10,000.
The added server (``added_server``) is named ``added`` and holds the first 100
tools of the fixture in catalog order (server by server, each server's tools in
order), each renamed ``<server>_<tool>`` (e.g. ``atlassian_jira_add_watcher``),
everything else unchanged.

Registry names are ``<server>__<tool>``, as toolgate names them; PraisonAI sees
each tool as the OpenAI function schema it builds from MCP tools:
``{"type": "function", "function": {"name", "description", "parameters"}}``.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

from praisonaiagents.tools.tool_search import BM25ToolSearcher, search_catalog

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "search"
SCALED_TOOLS = 10_000
ADDED_TOOLS = 100
MIN_TOOLS = 400
MIN_QUERIES = 80


class FixtureError(Exception):
    """The fixture breaks a rule the comparison relies on."""


def load_catalog(path: Path = FIXTURE / "catalog.json") -> list[dict]:
    return json.loads(path.read_text())["servers"]


def load_queries(path: Path = FIXTURE / "queries.json") -> list[dict]:
    return json.loads(path.read_text())


def registry_name(server: dict, tool: dict) -> str:
    return f"{server['name']}__{tool['name']}"


def openai_defs(servers: list[dict]) -> list[dict]:
    """The catalog as PraisonAI holds it: OpenAI function schemas."""
    return [
        {
            "type": "function",
            "function": {
                "name": registry_name(s, t),
                "description": t["description"],
                "parameters": t["inputSchema"],
            },
        }
        for s in servers
        for t in s["tools"]
    ]


def searcher_items(defs: list[dict]) -> list[dict]:
    """What search_catalog hands BM25ToolSearcher: name and description only."""
    return [{"name": d["function"]["name"], "description": d["function"]["description"]} for d in defs]


def scaled_catalog(servers: list[dict], total: int = SCALED_TOOLS) -> list[dict]:
    """The fixture replicated under new server names up to exactly `total` tools (rule in the module doc)."""
    out: list[dict] = []
    count = 0
    round_no = 0
    while count < total:
        for s in servers:
            if count >= total:
                break
            copy_ = copy.deepcopy(s)
            if round_no > 0:
                copy_["name"] = f"{s['name']}_{round_no}"
            copy_["tools"] = copy_["tools"][: total - count]
            count += len(copy_["tools"])
            out.append(copy_)
        round_no += 1
    return out


def added_server(servers: list[dict], size: int = ADDED_TOOLS) -> dict:
    """One extra server of `size` tools taken from the head of the fixture (rule in the module doc)."""
    tools = []
    for s in servers:
        for t in s["tools"]:
            if len(tools) == size:
                break
            renamed = copy.deepcopy(t)
            renamed["name"] = f"{s['name']}_{t['name']}"
            tools.append(renamed)
    return {
        "name": "added",
        "description": "The first tools of the fixture under one server, to time adding a server.",
        "origin": {"kind": "hand-written", "package": None, "version": None},
        "tools": tools,
    }


def check_fixture(servers: list[dict], queries: list[dict], min_queries: int = MIN_QUERIES) -> dict:
    """Raises FixtureError on the first broken rule; returns counts when all hold."""
    names = [registry_name(s, t) for s in servers for t in s["tools"]]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise FixtureError(f"registry names appear twice: {dupes[:10]}")
    if len(names) < MIN_TOOLS:
        raise FixtureError(f"catalog has {len(names)} tools, fewer than {MIN_TOOLS}")
    if len(queries) < min_queries:
        raise FixtureError(f"{len(queries)} queries, fewer than {min_queries}")
    known = set(names)
    missing = [q for q in queries if q["expected"] not in known]
    if missing:
        raise FixtureError("expected tools not in the catalog: " + "; ".join(f"{q['query']!r} -> {q['expected']}" for q in missing))
    texts = [q["query"] for q in queries]
    repeated = sorted({t for t in texts if texts.count(t) > 1})
    if repeated:
        raise FixtureError(f"queries appear twice: {repeated}")
    scaled = scaled_catalog(servers)
    scaled_names = [registry_name(s, t) for s in scaled for t in s["tools"]]
    if len(scaled_names) != SCALED_TOOLS or len(set(scaled_names)) != SCALED_TOOLS:
        raise FixtureError("the scaled catalog is not 10,000 distinct tools")
    extra = {registry_name(added_server(servers), t) for t in added_server(servers)["tools"]}
    if len(extra) != ADDED_TOOLS or extra & set(scaled_names):
        raise FixtureError("the added server's tools are not 100 new distinct names")
    return {"servers": len(servers), "tools": len(names), "queries": len(queries)}


def relevance(servers: list[dict], queries: list[dict]) -> dict:
    defs = openai_defs(servers)
    results = []
    for q in queries:
        top = [hit["name"] for hit in search_catalog(defs, q["query"], 3)]
        results.append({"query": q["query"], "expected": q["expected"], "top": top})
    n = len(results)
    top1 = sum(1 for r in results if r["top"][:1] == [r["expected"]])
    top3 = sum(1 for r in results if r["expected"] in r["top"])
    return {
        "searcher": f"praisonaiagents {version('praisonaiagents')}",
        "catalog_tools": len(defs),
        "queries": n,
        "top1": top1,
        "top3": top3,
        "top1_rate": round(top1 / n, 4),
        "top3_rate": round(top3 / n, 4),
        "results": results,
    }


def percentile(samples: list[int], pct: float) -> int:
    """Nearest-rank percentile of nanosecond samples."""
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def summary_ns(samples: list[int]) -> dict:
    return {
        "n": len(samples),
        "p50_us": round(percentile(samples, 50) / 1000, 1),
        "p99_us": round(percentile(samples, 99) / 1000, 1),
        "mean_us": round(statistics.fmean(samples) / 1000, 1),
    }


def timed(fn) -> tuple[int, object]:
    start = time.perf_counter_ns()
    value = fn()
    return time.perf_counter_ns() - start, value


def speed(servers: list[dict], queries: list[dict], repeat: int, rebuild_repeat: int) -> dict:
    scaled = scaled_catalog(servers)
    defs = openai_defs(scaled)
    defs_plus = defs + openai_defs([added_server(servers)])
    items, items_plus = searcher_items(defs), searcher_items(defs_plus)
    texts = [q["query"] for q in queries]

    builds = [timed(lambda: BM25ToolSearcher(items))[0] for _ in range(rebuild_repeat)]
    adds = [timed(lambda: BM25ToolSearcher(items_plus))[0] for _ in range(rebuild_repeat)]

    searcher = BM25ToolSearcher(items)
    searcher.search(texts[0], 5)  # warm-up
    on_index = [timed(lambda q=q: searcher.search(q, 5))[0] for _ in range(repeat) for q in texts]
    per_call = [timed(lambda q=q: search_catalog(defs, q, 5))[0] for _ in range(rebuild_repeat) for q in texts]

    return {
        "searcher": f"praisonaiagents {version('praisonaiagents')}",
        "python": sys.version.split()[0],
        "catalog_tools": len(defs),
        "queries": len(texts),
        "index_build": summary_ns(builds),
        "add_100_tool_server_by_rebuild": summary_ns(adds),
        "query_on_built_index": summary_ns(on_index),
        "query_search_catalog_per_call": summary_ns(per_call),
    }


def dump(servers: list[dict], path: Path, added_path: Path | None) -> dict:
    scaled = scaled_catalog(servers)
    path.write_text(json.dumps({"servers": scaled}) + "\n")
    out = {"wrote": str(path), "servers": len(scaled), "tools": sum(len(s["tools"]) for s in scaled)}
    if added_path is not None:
        added_path.write_text(json.dumps({"servers": [added_server(servers)]}) + "\n")
        out["wrote_added"] = str(added_path)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=Path, default=FIXTURE / "queries.json",
                        help="the query set (default tests/fixtures/search/queries.json; the held-out set is queries_heldout.json)")
    sub = parser.add_subparsers(dest="mode", required=True)
    sub.add_parser("check", help="fail loudly unless the fixture is sound")
    sub.add_parser("relevance", help="top-1 / top-3 hit rates of search_catalog on the queries")
    sp = sub.add_parser("speed", help="timings on the 10,000-tool catalog")
    sp.add_argument("--repeat", type=int, default=20, help="passes over the queries on a built index (default 20)")
    sp.add_argument("--rebuild-repeat", type=int, default=3, help="index builds, and passes of search_catalog over the queries (default 3)")
    dp = sub.add_parser("dump", help="write the 10,000-tool catalog for other implementations")
    dp.add_argument("path", type=Path)
    dp.add_argument("--added", type=Path, help="also write the extra 100-tool server here")
    args = parser.parse_args(argv)

    servers, queries = load_catalog(), load_queries(args.queries)
    main_set = args.queries.resolve() == (FIXTURE / "queries.json").resolve()
    try:
        counts = check_fixture(servers, queries, MIN_QUERIES if main_set else 1)
    except FixtureError as err:
        print(f"fixture check FAILED: {err}", file=sys.stderr)
        return 1
    if args.mode == "check":
        out = {"ok": True, **counts}
    elif args.mode == "relevance":
        out = relevance(servers, queries)
        print(f"top-1 {out['top1']}/{out['queries']} ({out['top1_rate']:.1%}), top-3 {out['top3']}/{out['queries']} ({out['top3_rate']:.1%})", file=sys.stderr)
    elif args.mode == "speed":
        out = speed(servers, queries, args.repeat, args.rebuild_repeat)
    else:
        out = dump(servers, args.path, args.added)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
