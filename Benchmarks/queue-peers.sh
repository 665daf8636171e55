# The queues Kiroku's is measured against, as pgbench scripts; sourced by queue-bench.sh and
# queue-row-cost.sh (which define psql_q).

# write_raw_script TABLE BATCH FILE: raw SQL, no Kiroku functions: claim BATCH jobs of TABLE (a
# table shaped like kiroku.jobs) with a lease, then complete them fenced by worker and attempt;
# each statement its own transaction.
write_raw_script() {
    cat > "$3" <<SQL
WITH picked AS MATERIALIZED (SELECT id FROM $1 WHERE state = 'queued' AND pool = 'cpu' AND run_after <= now() ORDER BY -priority::bigint, id LIMIT $2 FOR UPDATE SKIP LOCKED), claimed AS (UPDATE $1 AS j SET state = 'running', attempt = j.attempt + 1, worker_id = 'raw-' || :client_id, lease_expires_at = now() + interval '5 minutes', started_at = now() WHERE j.id = ANY (ARRAY(SELECT id FROM picked)) RETURNING j.id, j.attempt) SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(attempt), '{}') AS attempts FROM claimed \gset
UPDATE $1 AS j SET state = 'succeeded', result = '{}', finished_at = now(), lease_expires_at = NULL FROM unnest(:ids::bigint[], :attempts::int[]) AS t(id, attempt) WHERE j.id = t.id AND j.state = 'running' AND j.worker_id = 'raw-' || :client_id AND j.attempt = t.attempt;
SQL
}

# create_handwritten_queue FILE: the smallest SKIP LOCKED queue a user could write by hand (issue
# 22): a narrow table, one partial index, claim and complete of 32 by id; no leases' tokens,
# results, notifications or limits. Creates public.handwritten_queue and writes its script to FILE.
create_handwritten_queue() {
    psql_q -c "CREATE TABLE public.handwritten_queue (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        state text NOT NULL DEFAULT 'queued', priority int NOT NULL DEFAULT 0, attempts int NOT NULL DEFAULT 0,
        locked_by text, locked_at timestamptz)" \
        -c "CREATE INDEX handwritten_queue_runnable ON public.handwritten_queue (priority DESC, id) WHERE state = 'queued'"
    cat > "$1" <<SQL
WITH claimed AS (UPDATE handwritten_queue SET state = 'running', attempts = attempts + 1, locked_by = 'hand-' || :client_id, locked_at = now() WHERE id IN (SELECT id FROM handwritten_queue WHERE state = 'queued' ORDER BY priority DESC, id LIMIT 32 FOR UPDATE SKIP LOCKED) RETURNING id) SELECT coalesce(array_agg(id), '{}') AS ids FROM claimed \gset
UPDATE handwritten_queue SET state = 'succeeded', locked_by = NULL, locked_at = NULL WHERE id = ANY (:ids::bigint[]) AND locked_by = 'hand-' || :client_id;
SQL
}

# refill_hand_table TABLE ROWS: a hand-written queue's table emptied and refilled with ROWS runnable jobs.
refill_hand_table() {
    psql_q -c "TRUNCATE $1" -c "INSERT INTO $1 (priority) SELECT 0 FROM generate_series(1, $2)" -c "VACUUM ANALYZE $1"
}

# median VALUE...: the middle value (the lower middle one of an even count).
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
