#!/usr/bin/env bash
# Runs the comparisons whose results are in docs/benchmarks.md, one part or
# all of them, and leaves raw output and Markdown tables in bench/out/.
#
#   bench/run.sh                 # breakers fleet queue proxy
#   bench/run.sh fleet queue     # some of them
#
# breakers: guard vs gobreaker vs failsafe-go, go test -count 6, benchstat
# fleet:    the fleet simulation, 3 interleaved rounds, T = 600 ms and 300 ms
# queue:    retry scheduler vs River (needs PostgreSQL on 127.0.0.1:5432,
#           trust auth; override with HGBENCH_POSTGRES)
# proxy:    wrk direct / hostguard proxy / tinyproxy (bench/proxy.sh)
set -euo pipefail
cd "$(dirname "$0")"
out=out
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(breakers fleet queue proxy)

benchstat_bin() {
	command -v benchstat 2>/dev/null && return
	local bin
	bin="$(go env GOPATH)/bin/benchstat"
	[ -x "$bin" ] || go install golang.org/x/perf/cmd/benchstat@latest >&2
	echo "$bin"
}

for part in "${parts[@]}"; do
	echo "== $part (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	case $part in
	breakers)
		go test -run '^$' -bench . -benchmem -count 6 ./breakers/ | tee "$out/breakers.txt"
		"$(benchstat_bin)" -col /lib "$out/breakers.txt" | tee "$out/breakers.benchstat.txt"
		;;
	fleet)
		# The headline run uses T = 600 ms, which leaves slow hosts room for
		# a busy machine's scheduling delays; the 300 ms run shows the
		# same plan with less room.
		go run ./cmd/fleetsim -rounds 3 -timeout 600ms -long-outage | tee "$out/fleet-600.md"
		go run ./cmd/fleetsim -rounds 3 | tee "$out/fleet.md"
		;;
	queue)
		go run ./cmd/queuebench -runs 3 -pg "${HGBENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}" | tee "$out/queue.md"
		;;
	proxy)
		./proxy.sh | tee "$out/proxy.md"
		;;
	*)
		echo "run.sh: unknown part $part (want breakers, fleet, queue or proxy)" >&2
		exit 2
		;;
	esac
done
