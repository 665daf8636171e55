#!/usr/bin/env bash
# What Kiroku's jobs row costs a claim and a completion (issue 22; run by `make bench` inside
# scripts/with-postgres.sh). The same raw SQL (claim 32 with a lease, then complete them) runs on
# copies of kiroku.jobs made from the catalog, so they follow the schema: its columns, defaults and
# storage settings with only the primary key and the three partial indexes the protocol reads
# (runnable, running, finished); and three more copies, each that plus one of its features: its
# CHECK constraints, its BRIN indexes, its triggers and foreign keys. Beside them Kiroku's own table and the hand-written queue (queue-peers.sh), all in one
# pgbench run, so the machine's noise falls on all alike. Prints mean ms per batch and a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build -c release --show-bin-path)
seconds=${KIROKU_BENCH_SECONDS:-10}
fill=${KIROKU_BENCH_FILL:-400000}
rounds=${KIROKU_BENCH_ROUNDS:-3}
export KIROKU_DATABASE_URL="$KIROKU_TEST_DATABASE_URL" PGOPTIONS="-c client_min_messages=warning"
psql_q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
. Benchmarks/queue-peers.sh

"$bin/kiroku" migrate >/dev/null 2>&1
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
copies=(columns checks brin triggers)
psql_q -c "DROP SCHEMA IF EXISTS row_cost CASCADE" -c "DROP TABLE IF EXISTS public.handwritten_queue" -c "CREATE SCHEMA row_cost" -c "DO \$\$
    DECLARE copy text; definition text;
    BEGIN
        FOREACH copy IN ARRAY ARRAY[$(printf "'%s'," "${copies[@]}" | sed 's/,$//')] LOOP
            EXECUTE format('CREATE TABLE row_cost.%I (LIKE kiroku.jobs INCLUDING DEFAULTS %s) WITH (%s)',
                           copy, CASE WHEN copy = 'checks' THEN 'INCLUDING CONSTRAINTS' ELSE '' END,
                           (SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE oid = 'kiroku.jobs'::regclass));
            FOR definition IN
                SELECT pg_get_indexdef(i.indexrelid) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_am AS a ON a.oid = c.relam
                WHERE i.indrelid = 'kiroku.jobs'::regclass
                  AND (i.indisprimary OR c.relname IN ('jobs_runnable', 'jobs_running', 'jobs_finished') OR (copy = 'brin' AND a.amname = 'brin'))
            LOOP
                EXECUTE regexp_replace(definition, '^CREATE (UNIQUE )?INDEX \S+ ON kiroku\.jobs', 'CREATE \1INDEX ON row_cost.' || quote_ident(copy));
            END LOOP;
        END LOOP;
        FOR definition IN SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'kiroku.jobs'::regclass AND NOT tgisinternal LOOP
            EXECUTE replace(definition, ' ON kiroku.jobs ', ' ON row_cost.triggers ');
        END LOOP;
        -- Foreign keys: the job's own (to the job it shadows) and those of the tables that point at jobs.
        FOR definition IN SELECT 'ALTER TABLE row_cost.triggers ADD ' || replace(pg_get_constraintdef(oid), 'kiroku.jobs(', 'row_cost.triggers(')
                          FROM pg_constraint WHERE conrelid = 'kiroku.jobs'::regclass AND contype = 'f' LOOP
            EXECUTE definition;
        END LOOP;
        FOR definition IN SELECT format('CREATE TABLE row_cost.%I (LIKE %s); ALTER TABLE row_cost.%I ADD %s', c.conname, c.conrelid::regclass, c.conname,
                                        replace(pg_get_constraintdef(c.oid), 'kiroku.jobs(', 'row_cost.triggers('))
                          FROM pg_constraint AS c WHERE c.confrelid = 'kiroku.jobs'::regclass AND c.conrelid <> c.confrelid AND c.contype = 'f' LOOP
            EXECUTE definition;
        END LOOP;
    END \$\$"
create_handwritten_queue "$workdir/handwritten.sql"
tables=(kiroku.jobs "${copies[@]/#/row_cost.}")
scripts=()
for table in "${tables[@]}"; do
    write_raw_script "$table" 32 "$workdir/$table.sql"
    scripts+=(-f "$workdir/$table.sql")
done

# Mean ms per batch of each table's script, then the hand-written queue's, in one pgbench run.
round() {
    psql_q -c "TRUNCATE kiroku.jobs, kiroku.job_images" -c "INSERT INTO kiroku.jobs (image_uri) SELECT 'file:///noop/' || g || '.jpg' FROM generate_series(1, 2 * $fill) g"
    for copy in "${copies[@]}"; do
        psql_q -c "TRUNCATE row_cost.$copy CASCADE" -c "INSERT INTO row_cost.$copy SELECT * FROM kiroku.jobs"
    done
    for table in "${tables[@]}"; do psql_q -c "VACUUM ANALYZE $table"; done
    refill_hand_table public.handwritten_queue $((2 * fill))
    psql_q -c "CHECKPOINT"
    pgbench -n -M extended -c 2 -j 2 -T $((2 * seconds)) "${scripts[@]}" -f "$workdir/handwritten.sql" 2>"$workdir/pgbench.err" \
        | awk '/^ - latency average/ { printf "%s ", $5 }' || { cat "$workdir/pgbench.err" >&2; exit 1; }
}
echo "## Queue row cost: $(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), PostgreSQL $(psql -X -Atc 'SHOW server_version')"
echo
echo "What Kiroku's row costs: claim + complete of 32 as raw SQL, pgbench, 2 clients, all scripts in one run of"
echo "$((2 * seconds)) s; mean ms per batch, one figure per round. Copies of kiroku.jobs: its columns with the primary key"
echo "and the runnable, running and finished indexes; that plus one more of its features each (not cumulative)."
echo "A ratio is the hand-written queue's latency over the other's: their throughput ratio."
echo
echo "| kiroku.jobs | columns and 3 partial indexes | + CHECKs | + BRIN indexes | + triggers, foreign keys | hand-written | kiroku.jobs / hand-written | columns / hand-written |"
echo "|---|---|---|---|---|---|---|---|"
cells=()
ratios=(); column_ratios=()
for r in $(seq 1 "$rounds"); do
    read -r -a ms <<< "$(round)"
    for i in "${!ms[@]}"; do cells[$i]+="${ms[$i]} "; done
    ratios+=("$(awk "BEGIN { printf \"%.3f\", ${ms[5]} / ${ms[0]} }")"); column_ratios+=("$(awk "BEGIN { printf \"%.3f\", ${ms[5]} / ${ms[1]} }")")
done
echo "| ${cells[0]}| ${cells[1]}| ${cells[2]}| ${cells[3]}| ${cells[4]}| ${cells[5]}| **$(median "${ratios[@]}")x** | **$(median "${column_ratios[@]}")x** |"
psql_q -c "DROP SCHEMA row_cost CASCADE" -c "DROP TABLE public.handwritten_queue"
