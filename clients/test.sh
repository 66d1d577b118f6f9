#!/usr/bin/env bash
# Runs both clients' suites against the real daemon, built once. Under
# CI=true a missing python3 or node fails the run instead of skipping it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"

need() {
	if ! command -v "$1" >/dev/null 2>&1 && [ "${CI:-}" = "true" ] && command -v apt-get >/dev/null 2>&1; then
		echo "clients: $1 is not installed; installing it with apt"
		case "$1" in
		python3) pkgs="python3" ;;
		*) pkgs="nodejs npm" ;;
		esac
		# shellcheck disable=SC2086 # two package names on purpose
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null || true
	fi
	if ! command -v "$1" >/dev/null 2>&1; then
		if [ "${CI:-}" = "true" ]; then
			echo "clients: $1 is not installed; the client suites need it" >&2
			exit 1
		fi
		echo "clients: $1 is not installed; skipping its suite (CI=true makes this an error)" >&2
		return 1
	fi
}

bin_dir="$(mktemp -d)"
trap 'rm -rf "$bin_dir"' EXIT
(cd "$repo" && go build -o "$bin_dir/hostguard" ./cmd/hostguard)
export HOSTGUARD_BIN="$bin_dir/hostguard"

# The fast-fail tests drive requests, httpx and aiohttp. They come from
# Debian's packages, which install for /usr/bin/python3, while python3 on
# PATH may be another build: the suite runs under the first interpreter
# that has all three (apt installs them under CI=true when none has), else
# under python3, where those tests skip (and fail under CI=true).
has_http_libs() { command -v "$1" >/dev/null 2>&1 && "$1" -c 'import requests, httpx, aiohttp' >/dev/null 2>&1; }
pick_python() {
	local p
	for p in python3 /usr/bin/python3; do
		if has_http_libs "$p"; then echo "$p"; return; fi
	done
	if [ "${CI:-}" = "true" ] && command -v apt-get >/dev/null 2>&1; then
		echo "clients: installing python3-requests python3-httpx python3-aiohttp with apt" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2 && apt-get install -y -qq python3-requests python3-httpx python3-aiohttp >/dev/null || true
		if has_http_libs /usr/bin/python3; then echo /usr/bin/python3; return; fi
	fi
	echo python3
}

if need python3; then
	py=$(pick_python)
	echo "clients: python ($py)"
	(cd "$here/python" && "$py" -m unittest)
fi

if need node && need npm; then
	echo "clients: typescript"
	(cd "$here/typescript" && npm ci --no-audit --no-fund --loglevel=error &&
		npx tsc -p tsconfig.json --noEmit && npx tsc -p tsconfig.json &&
		node --test test/*.test.mjs)
fi
