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
. Benchmarks/queue-peers.sh

"$bin/kiroku" migrate >/dev/null 2>&1

# A fresh queue of $fill runnable jobs, behind $scheduled_fill jobs scheduled for tomorrow at top priority.
scheduled_fill=0
refill() {
    psql_q "$@" -c "TRUNCATE kiroku.jobs, kiroku.job_images" \
           -c "INSERT INTO kiroku.jobs (image_uri) SELECT 'file:///noop/' || g || '.jpg' FROM generate_series(1, $fill) g" \
           -c "INSERT INTO kiroku.jobs (image_uri, priority, run_after)
               SELECT 'file:///later/' || g || '.jpg', 100, now() + interval '1 day' FROM generate_series(1, $scheduled_fill) g" \
           -c "VACUUM ANALYZE kiroku.jobs" -c "CHECKPOINT"
}
succeeded() { psql -X -At "$@" -c "SELECT count(*) FROM kiroku.jobs WHERE state = 'succeeded'"; }

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
for batch in 1 32; do
    write_raw_script kiroku.jobs "$batch" "$workdir/raw$batch.sql"
    # The same two statements the Swift client sends, through the SQL functions.
    cat > "$workdir/claim$batch.sql" <<SQL
SELECT coalesce(array_agg(job_id), '{}') AS ids, coalesce(array_agg(lease_token), '{}') AS tokens FROM kiroku.claim('pgbench-' || :client_id, 'cpu', $batch, '5 minutes') \gset
SELECT count(*) FILTER (WHERE stored) FROM kiroku.complete_many(:ids::bigint[], :tokens::text[], array_fill('{}'::jsonb, ARRAY[cardinality(:ids::bigint[])]));
SQL
    # The protocol before lease tokens (migrations 0001-0008: fenced by worker id and attempt).
    cat > "$workdir/untokened$batch.sql" <<SQL
SELECT coalesce(array_agg(job_id), '{}') AS ids, coalesce(array_agg(attempt), '{}') AS attempts FROM kiroku.claim('pgbench-' || :client_id, 'cpu', $batch, '5 minutes') \gset
SELECT count(*) FILTER (WHERE stored) FROM kiroku.complete_many('pgbench-' || :client_id, :ids::bigint[], :attempts::int[], array_fill('{}'::jsonb, ARRAY[cardinality(:ids::bigint[])]));
SQL
done

# Jobs/s that pgbench completes with a script, on a freshly filled queue (in database $3, if given).
pgbench_rate() {
    local database=(${3:+-d "$3"})
    refill "${database[@]}"
    pgbench -n -M extended -c "$2" -j "$2" -T "$seconds" -f "$workdir/$1.sql" "${database[@]:1}" >/dev/null 2>"$workdir/pgbench.err" \
        || { cat "$workdir/pgbench.err" >&2; exit 1; }
    awk "BEGIN { print $(succeeded "${database[@]}") / $seconds }"
}

echo "## Queue: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), PostgreSQL $(psql -X -Atc 'SHOW server_version'), fsync $(psql -X -Atc 'SHOW fsync')"
echo
psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images"
enqueue=$("$bench" enqueue 100000 1000)
# Peer: the same rows (job, image side row, SHA-256) written by one server-side statement with
# no client transfer at all: the ceiling for any client.
psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images"
raw_start=$(date +%s.%N)
psql_q -c "WITH payload AS (SELECT '\\xffd8ffe0'::bytea || decode(repeat('07', 60), 'hex') AS image),
           jobs AS (INSERT INTO kiroku.jobs (image_inline, content_hash, idempotency_key)
                    SELECT true, sha256(p.image), 'raw-' || g FROM generate_series(1, 100000) AS g, payload AS p RETURNING id)
           INSERT INTO kiroku.job_images (job_id, image) SELECT jobs.id, p.image FROM jobs, payload AS p"
raw_enqueue=$(awk "BEGIN { print 100000 / ($(date +%s.%N) - $raw_start) }")
echo "Bulk enqueue, 100,000 inline jobs in statements of 1,000 (Swift API): $enqueue;" \
     "one server-side INSERT of the same rows (no client): $(printf '%.0f' "$raw_enqueue") jobs/s"
echo
echo "Claim + complete of no-op jobs, ${seconds} s per run, jobs/s. Every column runs the same two steps per batch"
echo "(claim with a lease, then complete fenced by the lease token), each statement its own transaction:"
echo "the Swift API; pgbench calling the same SQL functions; pgbench running equivalent raw SQL without them."
echo
echo "| batch | processes | Swift API | pgbench, same functions | pgbench, raw SQL (ceiling) | Swift / functions | Swift / raw |"
echo "|---|---|---|---|---|---|---|"
for batch in 1 32; do
    for procs in 1 2; do
        refill
        start=$(date +%s.%N)
        for p in $(seq 1 "$procs"); do "$bench" drain "$batch" "$seconds" "swift-$p" > "$workdir/out$p" & done
        wait
        elapsed=$(awk "BEGIN { print $(date +%s.%N) - $start }")
        swift_rate=$(awk "BEGIN { print $(succeeded) / $elapsed }")
        functions_rate=$(pgbench_rate "claim$batch" "$procs")
        raw_rate=$(pgbench_rate "raw$batch" "$procs")
        printf '| %s | %s | %.0f | %.0f | %.0f | %.0f%% | %.0f%% |\n' "$batch" "$procs" "$swift_rate" "$functions_rate" "$raw_rate" \
            "$(awk "BEGIN { print 100 * $swift_rate / $functions_rate }")" "$(awk "BEGIN { print 100 * $swift_rate / $raw_rate }")"
    done
done
echo
# What the lease tokens cost (issue 21): the same pgbench run on a second database migrated only
# to 0008 (the protocol fenced by worker id and attempt), alternated with today's, 5 rounds each.
psql_q -c "DROP DATABASE IF EXISTS kiroku_untokened" -c "CREATE DATABASE kiroku_untokened"
for migration in Migrations/000[1-8]_*.sql; do psql_q -d kiroku_untokened -1 -f "$migration"; done
echo "Lease tokens' cost: claim + complete through the SQL functions, pgbench, 2 clients, jobs/s per round"
echo "(today's protocol with tokens; a database migrated only to 0008, fenced by worker id and attempt):"
echo
echo "| batch | with tokens | without (0008) | ratio, median of 5 |"
echo "|---|---|---|---|"
for batch in 1 32; do
    with=(); without=(); ratios=()
    for round in 1 2 3 4 5; do
        w=$(pgbench_rate "claim$batch" 2); o=$(pgbench_rate "untokened$batch" 2 kiroku_untokened)
        with+=("$(printf '%.0f' "$w")"); without+=("$(printf '%.0f' "$o")"); ratios+=("$(awk "BEGIN { printf \"%.3f\", $w / $o }")")
    done
    median=$(median "${ratios[@]}")
    echo "| $batch | ${with[*]} | ${without[*]} | **${median}x** |"
done
psql_q -c "DROP DATABASE kiroku_untokened"
echo
# The hand-written queue (queue-peers.sh) is the ceiling a queue with Kiroku's guarantees is
# compared with. Beside it the same hand-written queue given what Kiroku guarantees (a lease
# deadline, a hashed token checked on completion, a result stored, partial indexes on running and
# finished jobs): what the guarantees themselves cost, apart from how Kiroku implements them. The
# three scripts share one pgbench run on one database (each client picks one at random per
# transaction), so the machine's noise falls on all of them alike; a transaction is one batch, so
# the ratio of mean latencies is the ratio of throughputs.
create_handwritten_queue "$workdir/handwritten.sql"
psql_q -c "CREATE TABLE public.handwritten_leased (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state text NOT NULL DEFAULT 'queued', priority int NOT NULL DEFAULT 0, attempts int NOT NULL DEFAULT 0,
    locked_by text, lease_expires_at timestamptz, token_hash bytea, result jsonb, finished_at timestamptz)" \
    -c "CREATE INDEX handwritten_leased_runnable ON public.handwritten_leased (priority DESC, id) WHERE state = 'queued'" \
    -c "CREATE INDEX handwritten_leased_running ON public.handwritten_leased (id) WHERE state = 'running'" \
    -c "CREATE INDEX handwritten_leased_finished ON public.handwritten_leased (finished_at) WHERE state = 'succeeded'"
cat > "$workdir/leased.sql" <<SQL
WITH claimed AS (UPDATE handwritten_leased SET state = 'running', attempts = attempts + 1, locked_by = 'hand-' || :client_id, lease_expires_at = now() + interval '5 minutes', token_hash = sha256(('token-' || :client_id)::bytea) WHERE id IN (SELECT id FROM handwritten_leased WHERE state = 'queued' ORDER BY priority DESC, id LIMIT 32 FOR UPDATE SKIP LOCKED) RETURNING id) SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \gset
UPDATE handwritten_leased SET state = 'succeeded', locked_by = NULL, lease_expires_at = NULL, token_hash = NULL, result = '{"top": [{"index": 1, "score": 0.5}]}', finished_at = now() WHERE id = ANY (:ids::bigint[]) AND state = 'running' AND token_hash = sha256(('token-' || :client_id)::bytea);
SQL
# Mean latency of a batch (ms) per script, Kiroku's, the hand-written, the hand-written with guarantees.
paired_latencies() {
    refill
    refill_hand_table public.handwritten_queue $((2 * fill))
    refill_hand_table public.handwritten_leased $((2 * fill))
    psql_q -c "CHECKPOINT"
    pgbench -n -M extended -c 2 -j 2 -T $((2 * seconds)) -f "$workdir/claim32.sql" -f "$workdir/handwritten.sql" \
        -f "$workdir/leased.sql" 2>"$workdir/pgbench.err" | awk '/^ - latency average/ { printf "%s ", $5 }' \
        || { cat "$workdir/pgbench.err" >&2; exit 1; }
}
echo "Against a queue written by hand: claim + complete of 32, pgbench, 2 clients, the three scripts in one"
echo "run of $((2 * seconds)) s; mean ms per batch each round (Kiroku's SQL functions with every guarantee; a narrow"
echo "hand-written SKIP LOCKED table with none; the same table with leases, tokens, results and Kiroku's"
echo "running/finished indexes). A ratio is the hand-written queue's latency over the other's: their throughput ratio."
echo
echo "| Kiroku functions | hand-written queue | hand-written with the guarantees | Kiroku / hand-written, median of 5 | with guarantees / hand-written |"
echo "|---|---|---|---|---|"
kiroku=(); hand=(); leased=(); ratios=(); leased_ratios=()
for round in 1 2 3 4 5; do
    read -r k h l <<< "$(paired_latencies)"
    kiroku+=("$k"); hand+=("$h"); leased+=("$l")
    ratios+=("$(awk "BEGIN { printf \"%.3f\", $h / $k }")"); leased_ratios+=("$(awk "BEGIN { printf \"%.3f\", $h / $l }")")
done
echo "| ${kiroku[*]} | ${hand[*]} | ${leased[*]} | **$(median "${ratios[@]}")x** | $(median "${leased_ratios[@]}")x |"
psql_q -c "DROP TABLE public.handwritten_queue, public.handwritten_leased"
echo
# Jobs scheduled for later (issue 22): 100,000 at top priority, due tomorrow, beside the same run
# without them, alternated. Throughput as above; the empty claim on a queue holding only them.
echo "SELECT count(*) FROM kiroku.claim('empty', 'cpu', 32, '5 minutes');" > "$workdir/empty.sql"
empty_claim_ms() {
    local saved=$fill; fill=0; refill; fill=$saved
    pgbench -n -M extended -c 1 -j 1 -T 5 -f "$workdir/empty.sql" 2>/dev/null | awk '/latency average/ { print $4 }'
}
echo "Scheduled jobs out of the claim's way: 100,000 jobs due tomorrow at top priority beside $fill runnable ones,"
echo "against the same queue without them; claim + complete of 32 (pgbench, 2 clients, jobs/s) and an empty claim (ms):"
echo
echo "| | with 100,000 scheduled | without | ratio, median of 3 |"
echo "|---|---|---|---|"
with=(); without=(); ratios=(); empty_with=(); empty_without=(); empty_ratios=()
for round in 1 2 3; do
    scheduled_fill=100000; w=$(pgbench_rate claim32 2); ew=$(empty_claim_ms)
    scheduled_fill=0; o=$(pgbench_rate claim32 2); eo=$(empty_claim_ms)
    with+=("$(printf '%.0f' "$w")"); without+=("$(printf '%.0f' "$o")"); ratios+=("$(awk "BEGIN { printf \"%.3f\", $w / $o }")")
    empty_with+=("$ew"); empty_without+=("$eo"); empty_ratios+=("$(awk "BEGIN { printf \"%.3f\", $ew / $eo }")")
done
echo "| claim + complete, jobs/s | ${with[*]} | ${without[*]} | **$(median "${ratios[@]}")x** |"
echo "| empty claim, ms | ${empty_with[*]} | ${empty_without[*]} | **$(median "${empty_ratios[@]}")x** |"
echo
# A completion's cost per job must not grow with the batch (migration 0015): one session claims a
# batch and completes it, five times per size; the claim that leased the batch is the peer.
batch_ms() {
    psql -X -At -v ON_ERROR_STOP=1 -c "DO \$\$
        DECLARE ids bigint[]; tokens text[]; t0 timestamptz; t1 timestamptz;
                claim_ms float8[] := '{}'; complete_ms float8[] := '{}';
        BEGIN
            FOR round IN 1..5 LOOP
                t0 := clock_timestamp();
                SELECT array_agg(job_id), array_agg(lease_token) INTO ids, tokens FROM kiroku.claim('batch', 'cpu', $1, '5 minutes');
                t1 := clock_timestamp();
                PERFORM count(*) FROM kiroku.complete_many(ids, tokens, array_fill('{}'::jsonb, ARRAY[$1]));
                claim_ms := claim_ms || 1000 * extract(epoch FROM t1 - t0)::float8;
                complete_ms := complete_ms || 1000 * extract(epoch FROM clock_timestamp() - t1)::float8;
            END LOOP;
            RAISE NOTICE '% %', (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(claim_ms) x),
                                (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(complete_ms) x);
        END \$\$" 2>&1 | sed -n 's/^NOTICE: *//p'
}
refill
echo "Claim and complete of one batch in one session, ms (median of 5 per size):"
echo
echo "| batch | claim | complete | complete / claim |"
echo "|---|---|---|---|"
for size in 32 1000; do
    read -r claim_ms complete_ms <<< "$(batch_ms "$size")"
    printf '| %s | %.2f | %.2f | %.2fx |\n' "$size" "$claim_ms" "$complete_ms" "$(awk "BEGIN { print $complete_ms / $claim_ms }")"
done
echo
psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images"
pickup=$("$bench" pickup 200)
echo "Idle pick-up latency (LISTEN/NOTIFY wake, enqueue to claimed), 200 samples: $pickup"
echo
# HOT updates: a claim or a completion changes state, which the partial indexes read, so it
# cannot be HOT; a heartbeat changes only the (unindexed) lease, so it should be.
updates() { psql -X -Atc "SELECT pg_stat_force_next_flush(); SELECT n_tup_upd || ' ' || n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'kiroku.jobs'::regclass" | tail -n 1; }
read -r claims_upd claims_hot <<< "$(updates)"
echo "Claims and completions in this run: $claims_upd row updates, $claims_hot HOT."
refill
read -r leased tokens <<< "$(psql -X -At -F ' ' -c "SELECT array_agg(job_id), array_agg(lease_token) FROM kiroku.claim('hb', 'cpu', 100, '5 minutes')")"
echo "SELECT kiroku.heartbeat('hb', '$leased'::bigint[], '$tokens'::text[], '5 minutes');" > "$workdir/heartbeat.sql"
read -r before_upd before_hot <<< "$(updates)"
pgbench -n -M extended -c 1 -t 500 -f "$workdir/heartbeat.sql" >/dev/null 2>&1
read -r after_upd after_hot <<< "$(updates)"
echo "Heartbeats (500 x 100 leases): $((after_upd - before_upd)) row updates, $((after_hot - before_hot)) HOT."
