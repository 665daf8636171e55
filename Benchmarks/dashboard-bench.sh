#!/usr/bin/env bash
# The dashboard's cost to the queue (run by `make bench` inside scripts/with-postgres.sh): claim +
# complete of no-op jobs through the Swift API (2 processes, batch 32, as queue-bench.sh runs them)
# with `kiroku dashboard` open and polled, against the same run without it, alternated round by
# round on one database. The dashboard connects as a kiroku_viewer login and is polled as
# $pollers open pages poll it (once a second each; one Python process on keep-alive connections,
# so that the client's own start-up is not counted as the dashboard's). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build -c release --show-bin-path)
seconds=${KIROKU_BENCH_SECONDS:-10}
fill=${KIROKU_BENCH_FILL:-400000}
rounds=${KIROKU_BENCH_ROUNDS:-5}
pollers=${KIROKU_BENCH_POLLERS:-4}
export KIROKU_DATABASE_URL="$KIROKU_TEST_DATABASE_URL"
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
. Benchmarks/queue-peers.sh

"$bin/kiroku" migrate >/dev/null 2>&1
psql_q -c "DROP ROLE IF EXISTS bench_viewer" -c "CREATE ROLE bench_viewer LOGIN IN ROLE kiroku_viewer"
workdir=$(mktemp -d)
dashboard=""
cleanup() { [ -n "$dashboard" ] && kill -TERM "$dashboard" 2>/dev/null; rm -rf "$workdir"; }
trap cleanup EXIT
"$bin/kiroku" dashboard --database-url "${KIROKU_DATABASE_URL/\/\/postgres@/\/\/bench_viewer@}" --listen 127.0.0.1:0 \
    > "$workdir/dashboard.out" 2>/dev/null &
dashboard=$!
for _ in $(seq 100); do grep -q "^dashboard: " "$workdir/dashboard.out" && break; sleep 0.1; done
address=$(sed -n 's/^dashboard: //p' "$workdir/dashboard.out")

refill() {
    psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images" \
           -c "INSERT INTO kiroku.jobs (image_uri) SELECT 'file:///noop/' || g || '.jpg' FROM generate_series(1, $fill) g" \
           -c "VACUUM ANALYZE kiroku.jobs" -c "CHECKPOINT"
}
# Jobs/s of 2 draining processes for $seconds, with $1 dashboard pollers beside them.
drain_rate() {
    refill
    local poller=""
    if [ "$1" -gt 0 ]; then
        python3 - "$address" "$1" "$workdir/polls" <<'PY' &
import http.client, sys, time, urllib.parse
address, pages, log = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], "a", buffering=1)
connections = [http.client.HTTPConnection(address.hostname, address.port, timeout=10) for _ in range(pages)]
while True:
    for connection in connections:
        start = time.monotonic()
        connection.request("GET", "/api/dashboard")
        response = connection.getresponse()
        response.read()
        log.write(f"{response.status} {time.monotonic() - start}\n")
        time.sleep(1 / pages)
PY
        poller=$!
    fi
    local start; start=$(date +%s.%N)
    local drains=()
    for p in 1 2; do "$bin/kiroku-queue-bench" drain 32 "$seconds" "bench-$p" > /dev/null & drains+=($!); done
    wait "${drains[@]}"
    local elapsed; elapsed=$(awk "BEGIN { print $(date +%s.%N) - $start }")
    [ -n "$poller" ] && kill "$poller" 2>/dev/null
    awk "BEGIN { print $(psql -X -At -c "SELECT count(*) FROM kiroku.jobs WHERE state = 'succeeded'") / $elapsed }"
}

echo "## Dashboard beside the queue: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), PostgreSQL $(psql -X -Atc 'SHOW server_version')"
echo
echo "Claim + complete of no-op jobs (Swift API, 2 processes, batch 32, ${seconds} s per run, $fill queued), jobs/s per round,"
echo "with \`kiroku dashboard\` polled by $pollers clients once a second each (as open pages poll it) and without it, alternated:"
echo
echo "| with the dashboard | without | with / without, median of $rounds |"
echo "|---|---|---|"
with=(); without=(); ratios=()
for round in $(seq 1 "$rounds"); do
    w=$(drain_rate "$pollers"); o=$(drain_rate 0)
    with+=("$(printf '%.0f' "$w")"); without+=("$(printf '%.0f' "$o")"); ratios+=("$(awk "BEGIN { printf \"%.3f\", $w / $o }")")
done
echo "| ${with[*]} | ${without[*]} | **$(median "${ratios[@]}")x** |"
echo
polls=$(wc -l < "$workdir/polls")
ok=$(grep -c '^200 ' "$workdir/polls" || true)
p50=$(awk '{ print $2 }' "$workdir/polls" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] * 1000 }')
echo "The dashboard answered $ok of $polls polls with 200; median response $(printf '%.0f' "$p50") ms while the queue drained."
