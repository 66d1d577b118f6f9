#!/usr/bin/env bash
# Checks dist/hostguard.service with systemd-analyze against the binary just
# built. systemd-analyze only warns about unknown or misspelt keys, so any
# output at all counts as a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "check-dist: systemd-analyze not installed; unit not checked"
	exit 0
fi
bin="$PWD/bin/hostguard"
[ -x "$bin" ] || make -s build
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|/usr/local/bin/hostguard|$bin|" dist/hostguard.service >"$dir/hostguard.service"
if ! out=$(systemd-analyze verify "$dir/hostguard.service" 2>&1) || [ -n "$out" ]; then
	echo "check-dist: dist/hostguard.service:" >&2
	echo "$out" >&2
	exit 1
fi
echo "check-dist: dist/hostguard.service verified"
