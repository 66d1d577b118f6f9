#!/usr/bin/env bash
# Reliability run: kill -9 cycles with four concurrent HTTP workers against
# the real `hostguard serve` on SQLite, on PostgreSQL and with two daemons on
# one PostgreSQL (internal/reliability), then every fuzz target of the
# module for a while.
#
#   scripts/reliability.sh short   a few cycles per engine, 300 executions per fuzz
#                                  target: about two minutes, what CI runs
#   scripts/reliability.sh long    40 cycles per engine and a PostgreSQL
#                                  restart under load (as root, with
#                                  pg_ctlcluster), 30 s per fuzz target
#
# FUZZTIME overrides the time (or, as 300x, the count) per fuzz target. PostgreSQL is read from
# HOSTGUARD_TEST_POSTGRES (default postgres://postgres@127.0.0.1:5432/test);
# without one the PostgreSQL scenarios skip, except under CI=true, where
# they fail.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-short}"
case "$mode" in
# The short run counts executions rather than seconds: a 2 s budget can
# run out while the fuzzer is still gathering its baseline coverage on a
# loaded machine, and go test then reports "context deadline exceeded" as
# a failure that no input causes.
short) fuzztime="${FUZZTIME:-300x}" ;;
long) fuzztime="${FUZZTIME:-30s}" ;;
*)
	echo "usage: scripts/reliability.sh [short|long]" >&2
	exit 2
	;;
esac

began=$(date +%s)
summary="$(mktemp)"
trap 'rm -f "$summary"' EXIT
failed=0

echo "== kill -9 cycles ($mode)"
if ! HOSTGUARD_RELIABILITY="$mode" HOSTGUARD_RELIABILITY_SUMMARY="$summary" \
	go test -count=1 -v -timeout 40m -run '^TestReliability' ./internal/reliability/; then
	failed=1
fi

# Only packages with a Fuzz function in a test file are asked for their
# targets, so that listing does not build every test binary of the module.
cycles_done=$(date +%s)
echo "== fuzz targets, $fuzztime each"
pkgs=()
while read -r pkg dir; do
	if grep -qs '^func Fuzz' "$dir"/*_test.go; then
		pkgs+=("$pkg")
	fi
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)
targets=()
if [ "${#pkgs[@]}" -gt 0 ]; then
	listing="$(go test -list '^Fuzz' "${pkgs[@]}")" || failed=1
	# `go test -list` prints a package's names, then "ok <package> <time>".
	mapfile -t targets < <(awk '/^Fuzz/ { names[n++] = $1; next }
		/^ok/ { for (i = 0; i < n; i++) print $2, names[i]; n = 0 }' <<<"$listing")
fi
fuzzfail=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "-- $name ($pkg)"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
		fuzzfail+=("$name ($pkg)")
		failed=1
	fi
done

now=$(date +%s)
echo "== summary ($mode, $(date -u '+%Y-%m-%d %H:%M UTC'), $((now - began)) s: kill cycles $((cycles_done - began)) s, fuzzing $((now - cycles_done)) s)"
cat "$summary"
echo "fuzz: ${#targets[@]} targets, $fuzztime each, ${#fuzzfail[@]} failed"
for f in "${fuzzfail[@]}"; do
	echo "  failed: $f (the failing input is under the package's testdata/fuzz/)"
done
exit "$failed"
