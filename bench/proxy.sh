#!/usr/bin/env bash
# Proxy overhead: wrk against a local upstream directly, through hostguard's
# forward proxy, and through tinyproxy, all on 127.0.0.1, in one run.
# Rounds alternate the three targets; the table gives medians.
#
#   bench/proxy.sh [-d 10s] [-c 32] [-t 2] [-r 3] [-b BIN]
#
# -b adds a fourth target, "baseline": the same proxy served by another
# hostguard binary (an older build), so a change is measured side by side
# with what it replaces, in one run.
#
# Needs wrk and tinyproxy (Debian packages; installed with apt-get when
# missing). Starts its own upstream, hostguard daemon and tinyproxy on free
# loopback ports, and stops them on exit. Prints a Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")"

duration=10s conns=32 threads=2 rounds=3 baseline=
while getopts "d:c:t:r:b:" opt; do
	case $opt in
	d) duration=$OPTARG ;;
	c) conns=$OPTARG ;;
	t) threads=$OPTARG ;;
	r) rounds=$OPTARG ;;
	b) baseline=$(realpath "$OPTARG") ;;
	*) echo "usage: $0 [-d duration] [-c connections] [-t threads] [-r rounds] [-b baseline-hostguard]" >&2; exit 2 ;;
	esac
done

if ! command -v wrk >/dev/null || ! command -v tinyproxy >/dev/null; then
	echo "proxy.sh: installing wrk and tinyproxy with apt-get" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq wrk tinyproxy >/dev/null
fi

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

# free_port asks the kernel for a free loopback port, by starting the
# upstream on port 0 and reading back what it got. Each call reads a file
# of its own: on a busy machine the child may not have truncated a shared
# one yet when the loop first reads it, which handed out the previous
# call's port again (and killed the child before it could exit cleanly).
free_port() {
	local f
	f=$(mktemp "$work/probe.XXXXXX")
	"$work/upstream" -listen 127.0.0.1:0 >"$f" 2>&1 &
	local p=$!
	until grep -q listening "$f" 2>/dev/null; do sleep 0.05; done
	kill "$p"; wait "$p" 2>/dev/null || true
	sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$f"
}

wait_port() {
	for _ in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "proxy.sh: nothing listens on 127.0.0.1:$1" >&2
	return 1
}

go build -o "$work/upstream" ./cmd/upstream
(cd .. && go build -o "$work/hostguard" ./cmd/hostguard)

up_port=$(free_port)
hg_port=$(free_port)
bl_port=$(free_port)
bl_api_port=$(free_port)
api_port=$(free_port)
tp_port=$(free_port)

"$work/upstream" -listen "127.0.0.1:$up_port" >/dev/null &
pids+=($!)
"$work/hostguard" serve --listen "127.0.0.1:$api_port" --proxy-listen "127.0.0.1:$hg_port" \
	--allow-private --db "$work/hostguard.db" --log-level warn 2>"$work/hostguard.log" &
pids+=($!)
if [ -n "$baseline" ]; then
	"$baseline" serve --listen "127.0.0.1:$bl_api_port" --proxy-listen "127.0.0.1:$bl_port" \
		--allow-private --db "$work/baseline.db" --log-level warn 2>"$work/baseline.log" &
	pids+=($!)
fi
cat >"$work/tinyproxy.conf" <<CONF
Port $tp_port
Listen 127.0.0.1
Timeout 600
MaxClients 1024
Allow 127.0.0.1
LogLevel Critical
LogFile "$work/tinyproxy.log"
PidFile "$work/tinyproxy.pid"
DisableViaHeader Yes
CONF
tinyproxy -d -c "$work/tinyproxy.conf" &
pids+=($!)
echo "proxy.sh: upstream :$up_port, hostguard proxy :$hg_port (API :$api_port), tinyproxy :$tp_port" >&2
wait_port "$up_port"; wait_port "$hg_port" || { cat "$work/hostguard.log" >&2; exit 1; }; wait_port "$tp_port"
targets=(direct hostguard tinyproxy)
if [ -n "$baseline" ]; then
	wait_port "$bl_port" || { cat "$work/baseline.log" >&2; exit 1; }
	targets+=(baseline)
fi

# A forward proxy takes the absolute URL in the request line; wrk sends its
# path verbatim, so the path is the upstream's full URL.
cat >"$work/proxy.lua" <<LUA
wrk.path = "http://127.0.0.1:$up_port/player_api.php"
wrk.headers["Host"] = "127.0.0.1:$up_port"
LUA

target_url() {
	case $1 in
	direct) echo "http://127.0.0.1:$up_port/player_api.php" ;;
	hostguard) echo "http://127.0.0.1:$hg_port/" ;;
	baseline) echo "http://127.0.0.1:$bl_port/" ;;
	tinyproxy) echo "http://127.0.0.1:$tp_port/" ;;
	esac
}

# Check each path answers before timing it.
for t in "${targets[@]}"; do
	if [ "$t" = direct ]; then
		curl -fsS -o /dev/null "$(target_url direct)"
	else
		curl -fsS -o /dev/null -x "$(target_url "$t")" "$(target_url direct)"
	fi
done

# to_ms converts a wrk latency ("812.00us", "1.23ms", "1.10s") to ms.
to_ms() {
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /m$/) n *= 60000; else if (v ~ /s$/) n *= 1000
		printf "%.3f", n
	}'
}

load0=$(uptime | sed 's/.*load average: //')
n=${#targets[@]}
for r in $(seq 1 "$rounds"); do
	for i in $(seq 0 $((n - 1))); do
		t=${targets[$(((r + i) % n))]}
		args=(-t "$threads" -c "$conns" -d "$duration" --latency)
		[ "$t" != direct ] && args+=(-s "$work/proxy.lua")
		wrk "${args[@]}" "$(target_url "$t")" >"$work/wrk-$t-$r.txt"
		rps=$(awk '/^Requests\/sec:/ {print $2}' "$work/wrk-$t-$r.txt")
		p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$work/wrk-$t-$r.txt")")
		p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$work/wrk-$t-$r.txt")")
		# Socket errors (connect, read, write, timeout) plus non-2xx answers.
		errs=$(awk '/Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} /Non-2xx/ {n += $NF} END {print n + 0}' "$work/wrk-$t-$r.txt")
		echo "$t $rps $p50 $p99 $errs" >>"$work/results"
		echo "round $r $t: $rps req/s, p50 $p50 ms, p99 $p99 ms, $errs errors" >&2
	done
done

median() { sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'). Machine: $(nproc) CPUs. wrk $(wrk -v 2>&1 | awk 'NR == 1 {print $2}'), tinyproxy $(tinyproxy -v 2>&1 | awk '{print $2}')."
echo
echo "Load before the run: $load0; after: $(uptime | sed 's/.*load average: //')."
echo
echo "Command: \`bench/proxy.sh -d $duration -c $conns -t $threads -r $rounds${baseline:+ -b BASELINE}\` (wrk -t$threads -c$conns -d$duration --latency; $rounds rounds alternating the targets; medians)"
echo
echo "| path | req/s | p50 (ms) | p99 (ms) | req/s vs direct | socket errors + non-2xx per run |"
echo "|---|---:|---:|---:|---:|---:|"
direct_rps=$(awk '$1 == "direct" {print $2}' "$work/results" | median)
for t in "${targets[@]}"; do
	rps=$(awk -v t="$t" '$1 == t {print $2}' "$work/results" | median)
	p50=$(awk -v t="$t" '$1 == t {print $3}' "$work/results" | median)
	p99=$(awk -v t="$t" '$1 == t {print $4}' "$work/results" | median)
	errs=$(awk -v t="$t" '$1 == t {print $5}' "$work/results" | median)
	ratio=$(awk -v a="$rps" -v b="$direct_rps" 'BEGIN {printf "%.2f", a / b}')
	echo "| $t | $rps | $p50 | $p99 | $ratio | $errs |"
done
