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

if need python3; then
	echo "clients: python"
	(cd "$here/python" && python3 -m unittest)
fi

if need node && need npm; then
	echo "clients: typescript"
	(cd "$here/typescript" && npm ci --no-audit --no-fund --loglevel=error &&
		npx tsc -p tsconfig.json --noEmit && npx tsc -p tsconfig.json &&
		node --test test/*.test.mjs)
fi
