#!/usr/bin/env bash
# Runs the client examples against the real binary: builds it, starts a
# daemon on free loopback ports and runs examples/python and examples/node.
# Under CI=true a missing python3 or node fails; otherwise it is skipped
# with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/hostguard" ./cmd/hostguard
# The daemon as the README starts it, plus --allow-private (the examples'
# hosts are on loopback); the ports, the file and the log format only let
# this script find it.
"$work/hostguard" serve --listen 127.0.0.1:0 --proxy-listen 127.0.0.1:0 --db "$work/ex.db" \
	--allow-private --log-format json 2>"$work/log" &
pid=$!
for _ in $(seq 1 100); do grep -q '"hostguard: listening"' "$work/log" 2>/dev/null && break; sleep 0.1; done
line=$(grep '"hostguard: listening"' "$work/log") || { cat "$work/log" >&2; echo "examples: the daemon did not start" >&2; exit 1; }
export HOSTGUARD_API="http://$(sed -n 's/.*"api":"\([^"]*\)".*/\1/p' <<<"$line")"
export HOSTGUARD_PROXY="http://$(sed -n 's/.*"proxy":"\([^"]*\)".*/\1/p' <<<"$line")"
export no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost
for tool in python3 node; do
	if ! command -v "$tool" >/dev/null; then
		if [ "${CI:-}" = true ]; then echo "examples: $tool is missing" >&2; exit 1; fi
		echo "examples: $tool is missing; skipping its example" >&2
		continue
	fi
	case $tool in
	python3) echo "== examples/python"; python3 examples/python/fastfail.py ;;
	node) echo "== examples/node"; node examples/node/fastfail.mjs ;;
	esac
done
