#!/usr/bin/env bash
# Queue benchmark (run by `make bench` inside scripts/with-postgres.sh).
# No-op jobs through the Swift queue API beside pgbench running the same SQL functions on the
# same database in the same run: the pgbench figure is the raw ceiling, the ratio is what the
# Swift client keeps of it. Prints a Markdown table for Benchmarks/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build -c release --show-bin-path)
bench="$bin/kiroku-queue-bench"
seconds=${KIROKU_BENCH_SECONDS:-10}
fill=${KIROKU_BENCH_FILL:-400000}
export KIROKU_DATABASE_URL="$KIROKU_TEST_DATABASE_URL"
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

"$bin/kiroku" migrate >/dev/null 2>&1

refill() {
    psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images" \
           -c "INSERT INTO kiroku.jobs (image_uri) SELECT 'file:///noop/' || g || '.jpg' FROM generate_series(1, $fill) g" \
           -c "VACUUM ANALYZE kiroku.jobs"
}
succeeded() { psql -X -Atc "SELECT count(*) FROM kiroku.jobs WHERE state = 'succeeded'"; }

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
for batch in 1 32; do
    # The same two statements the Swift client sends (extended protocol, each its own transaction).
    cat > "$workdir/claim$batch.sql" <<SQL
SELECT coalesce(array_agg(job_id), '{}') AS ids, coalesce(array_agg(attempt), '{}') AS attempts FROM kiroku.claim('pgbench-' || :client_id, 'cpu', $batch, '5 minutes') \gset
SELECT count(*) FROM unnest(:ids::bigint[], :attempts::int[]) AS t(id, attempt) WHERE kiroku.complete(t.id, 'pgbench-' || :client_id, t.attempt, '{}');
SQL
done

echo "## Queue: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), PostgreSQL $(psql -X -Atc 'SHOW server_version'), fsync $(psql -X -Atc 'SHOW fsync')"
echo
psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images"
enqueue=$("$bench" enqueue 100000 1000)
echo "Bulk enqueue, 100,000 inline jobs in statements of 1,000 (Swift API): $enqueue"
echo
echo "Claim + complete, ${seconds} s per run, jobs/s (pgbench: same SQL functions, same two statements per batch):"
echo
echo "| batch | processes | Swift API | pgbench (raw ceiling) | Swift / raw |"
echo "|---|---|---|---|---|"
for batch in 1 32; do
    for procs in 1 2; do
        refill
        start=$(date +%s.%N)
        for p in $(seq 1 "$procs"); do "$bench" drain "$batch" "$seconds" "swift-$p" > "$workdir/out$p" & done
        wait
        elapsed=$(awk "BEGIN { print $(date +%s.%N) - $start }")
        swift_rate=$(awk "BEGIN { print $(succeeded) / $elapsed }")
        refill
        pgbench -n -M extended -c "$procs" -j "$procs" -T "$seconds" -f "$workdir/claim$batch.sql" >/dev/null 2>"$workdir/pgbench.err" \
            || { cat "$workdir/pgbench.err" >&2; exit 1; }
        raw_rate=$(awk "BEGIN { print $(succeeded) / $seconds }")
        printf '| %s | %s | %.0f | %.0f | %.0f%% |\n' "$batch" "$procs" "$swift_rate" "$raw_rate" "$(awk "BEGIN { print 100 * $swift_rate / $raw_rate }")"
    done
done
echo
psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images"
pickup=$("$bench" pickup 200)
echo "Idle pick-up latency (LISTEN/NOTIFY wake, enqueue to claimed), 200 samples: $pickup"
echo
hot=$(psql -X -Atc "SELECT n_tup_upd || ' updates, ' || n_tup_hot_upd || ' HOT' FROM pg_stat_user_tables WHERE relid = 'kiroku.jobs'::regclass")
echo "kiroku.jobs after the run: $hot"
