#!/usr/bin/env bash
# Interleaved benchmark runs: builds one package's test binary and runs its
# benchmarks -count 1 at a time, N times, so that every library is measured
# in every run and a drift of the shared machine touches them all alike
# (go test -count N runs each benchmark N times in a row instead).
# Prints each benchmark's median cpu-ns/op (ns/op when the benchmark does
# not report CPU time) and, against the benchmark named by -r, the median
# of the per-run ratios and in how many runs each came in below it.
#
#   bench/interleave.sh [-n 15] [-t 300ms] [-r REF] PACKAGE BENCH-REGEXP
#   bench/interleave.sh -r lib=hostguard ./breakers 'Open$'
set -euo pipefail
cd "$(dirname "$0")"

runs=15 benchtime=300ms ref=
while getopts "n:t:r:" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	t) benchtime=$OPTARG ;;
	r) ref=$OPTARG ;;
	*) echo "usage: $0 [-n runs] [-t benchtime] [-r reference] package bench-regexp" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-n runs] [-t benchtime] [-r reference] package bench-regexp" >&2; exit 2; }
pkg=$1 pattern=$2

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" "$pkg"
for i in $(seq 1 "$runs"); do
	# Benchmarks run in the package's folder, as go test runs them.
	(cd "$pkg" && "$dir/bench.test" -test.run '^$' -test.bench "$pattern" -test.benchtime "$benchtime" -test.benchmem -test.count 1) |
		awk -v run="$i" '/^Benchmark/ {
			v = $3
			for (f = 4; f < NF; f++) if ($(f + 1) == "cpu-ns/op") v = $f
			print run, $1, v
		}'
done >"$dir/runs"

awk -v ref="$ref" '
	{ name = $2; sub(/-[0-9]+$/, "", name); val[name, $1] = $3; names[name] = 1; runs[$1] = 1
	  if (ref != "" && index(name, ref) > 0 && length(name) - index(name, ref) + 1 == length(ref)) refname = name }
	function median(a, n,    i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		printf "| benchmark | runs | median | ratio to %s (median of runs) | runs below it |\n|---|---:|---:|---:|---:|\n", (refname == "" ? "-" : refname)
		for (name in names) {
			n = 0; k = 0; below = 0
			for (r in runs) {
				if (!((name, r) in val)) continue
				v[++n] = val[name, r]
				if (refname != "" && (refname, r) in val) { q[++k] = val[name, r] / val[refname, r]; if (q[k] < 1) below++ }
			}
			m = median(v, n)
			if (k > 0) printf "| %s | %d | %.1f | %.3f | %d |\n", name, n, m, median(q, k), below
			else printf "| %s | %d | %.1f | - | - |\n", name, n, m
			delete v; delete q
		}
	}' "$dir/runs" | { read -r h1; read -r h2; echo "$h1"; echo "$h2"; sort; }
