#!/usr/bin/env bash
# Hook overhead, as a ratio: an allowed Bash call's hook round trip
# (`toolgate hook run claude-code` with Claude Code's documented PreToolUse
# payload on stdin, the engine running, a policy rule allowing the command)
# against a hook that only prints Claude Code's allow answer (a two-line
# shell script), run in turn A B A B ... and compared pair by pair, so the
# ratio holds when the machine's speed drifts. Both run as an agent runs a
# hook: a new process with a stripped environment (HOME, PATH) and the
# payload on stdin.
#
#   CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
#     cargo build --release -p toolgate --bin toolgate
#   bench/hooks/run.sh [PAIRS]            # default 100 pairs, after 5 warm-up pairs
#
# TOOLGATE_BIN picks another binary (default target/release/toolgate, or
# $CARGO_TARGET_DIR/release/toolgate). `bench/hooks/run.sh --setup DIR`
# only sets DIR up, starts the engine and prints the two commands, for
# timing them with another tool (hyperfine, /usr/bin/time -v); stop the
# engine with the `kill` it prints.
#
# Each allowed call waits in the engine for a PostToolUse that never comes
# (at most 4096 at once, 30 minutes each): keep a run well under 2000
# pairs, or restart the engine between runs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${TOOLGATE_BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/toolgate}
[ -x "$bin" ] || { echo "no toolgate binary at $bin; build it first (see the top of $0)" >&2; exit 2; }

setup_only=""
if [ "${1:-}" = "--setup" ]; then
  setup_only=1
  dir=${2:?--setup DIR}
  mkdir -p "$dir"
  pairs=0
else
  pairs=${1:-100}
  dir=$(mktemp -d)
fi
home=$dir/home
mkdir -p "$home/.config/toolgate" "$home/proj"

# The policy allows this one command; the loop guard is off for the agent's
# Bash, since the benchmark repeats one call on purpose.
cat > "$home/.config/toolgate/config.toml" <<TOML
[builtin]
roots = ["$home/proj"]

[[policy.rules]]
tool = "shell_exec"
arg = "command"
regex = '^ls -la\$'
verdict = "allow"
reason = "benchmark: listing is routine"

[tools.claude-code__Bash.loop_guard]
warn_at = 0
block_at = 0
halt_at = 0
TOML

sed -e "s|/home/user/my-project|$home/proj|" -e 's|"npm test"|"ls -la"|' \
  "$repo/tests/fixtures/hooks/claude-code/pre_tool_use_bash.json" > "$dir/payload.json"

cat > "$dir/allow.sh" <<'SH'
#!/bin/sh
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"allowed"}}'
SH
chmod +x "$dir/allow.sh"

env -i HOME="$home" PATH="$PATH" "$bin" serve --no-http --socket "$dir/agent.sock" \
  > "$dir/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do
  grep -q "serving MCP" "$dir/serve.log" 2>/dev/null && break
  sleep 0.05
done
grep -q "serving MCP" "$dir/serve.log" || { cat "$dir/serve.log" >&2; exit 1; }

a="env -i HOME=$home PATH=$PATH $bin hook run claude-code"
b="env -i HOME=$home PATH=$PATH $dir/allow.sh"
answer=$($a < "$dir/payload.json")
case "$answer" in
  *'"permissionDecision":"allow"'*) ;;
  *) echo "the hook did not allow the benchmark call: $answer" >&2; kill "$serve_pid"; exit 1 ;;
esac

if [ -n "$setup_only" ]; then
  echo "A: $a < $dir/payload.json"
  echo "B: $b < $dir/payload.json"
  echo "stop the engine: kill $serve_pid"
  exit 0
fi
trap 'kill "$serve_pid" 2>/dev/null; rm -rf "$dir"' EXIT

# Wall time of one run, in microseconds.
time_us() {
  local t0 t1
  t0=$EPOCHREALTIME
  "$@" < "$dir/payload.json" > /dev/null
  t1=$EPOCHREALTIME
  echo $(( (${t1/./} - ${t0/./}) ))
}

for _ in 1 2 3 4 5; do time_us $a > /dev/null; time_us $b > /dev/null; done
: > "$dir/a"; : > "$dir/b"; : > "$dir/ratio"
for _ in $(seq "$pairs"); do
  ta=$(time_us $a); tb=$(time_us $b)
  echo "$ta" >> "$dir/a"; echo "$tb" >> "$dir/b"
  awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.3f\n", a / b }' >> "$dir/ratio"
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { sort -n "$1" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo " … " hi }'; }
echo "pairs: $pairs"
echo "A toolgate hook run claude-code (allowed Bash call): median $(median "$dir/a") µs  (min … max $(range "$dir/a"))"
echo "B a hook that only prints allow:                      median $(median "$dir/b") µs  (min … max $(range "$dir/b"))"
echo "A/B, pair by pair: median $(median "$dir/ratio")  (min … max $(range "$dir/ratio"))"
