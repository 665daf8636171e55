-- 0013: claims start where the worker's last claim ended, not at the head of the index (issue 22).
-- A claim's index scan began at the head of the runnable index and stepped over the entries of
-- every job claimed since the last VACUUM: a claimed row leaves the index only when VACUUM
-- removes its entry. Draining 400,000 jobs at 30,000/s, a claim of 32 read 741 index pages after
-- 192,000 claims, and that walk was a fifth to a third of a SKIP LOCKED queue's time. Now:
-- * The runnable index is keyed (pool, -priority, id), the claim's order as one ascending key, so
--   a claim can start after a position with a row comparison.
-- * kiroku.claim keeps a cursor in the session (the setting kiroku.claim_cursor): the pool, the
--   queue's epoch and the last position a full batch was claimed at. The next claim of that pool
--   starts after it while the epoch is unchanged and the cursor is younger than 100 ms; a
--   shorter batch, another pool, a changed epoch or an older cursor start at the head again.
-- * The epoch (the sequence kiroku.queue_epoch) moves whenever a job may become runnable ahead
--   of a cursor: a job turned 'queued' by an UPDATE (promotion, rescue, release, requeue, an
--   admin's edit) or its priority or pool changed while queued, and an INSERT of a job above the
--   default priority. An insert at priority 0 or below takes a new, higher id, so it lies after
--   every cursor at priority 0 or above; a cursor below priority 0 is never kept.
-- * What the epoch cannot see, a job committed after a later one was passed (concurrent
--   producers or requeues committing out of order), waits at most until the cursor's 100 ms are
--   up: the next claim of any worker starts at the head again.
-- Also: finished jobs are announced by complete_many itself when they fit one notification, and
-- the trigger that schedules a queued job whose run_after moves ahead runs AFTER the update. A
-- BEFORE row trigger made PostgreSQL lock each row before every UPDATE of kiroku.jobs, claims and
-- completions included (one more WAL record a job); kiroku.fail now schedules its retries itself.

SET LOCAL ROLE kiroku_owner;

CREATE SEQUENCE kiroku.queue_epoch;
COMMENT ON SEQUENCE kiroku.queue_epoch IS 'Moves whenever a job may have become runnable ahead of a claim cursor (see kiroku.claim).';

DROP INDEX kiroku.jobs_runnable;
CREATE INDEX jobs_runnable ON kiroku.jobs (pool, (-priority::bigint), id) WHERE state = 'queued';

CREATE FUNCTION kiroku.advance_queue_epoch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM nextval('kiroku.queue_epoch');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION kiroku.advance_queue_epoch() IS 'Trigger: moves kiroku.queue_epoch, so that claim cursors start at the head again.';
REVOKE ALL ON FUNCTION kiroku.advance_queue_epoch() FROM PUBLIC;

CREATE TRIGGER jobs_requeued AFTER UPDATE OF state, priority, pool ON kiroku.jobs
    FOR EACH ROW WHEN (NEW.state = 'queued' AND (OLD.state <> 'queued' OR OLD.priority <> NEW.priority OR OLD.pool <> NEW.pool))
    EXECUTE FUNCTION kiroku.advance_queue_epoch();

-- As in 0002, and inserted jobs above the default priority move the epoch.
CREATE OR REPLACE FUNCTION kiroku.notify_jobs_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_notify('kiroku_jobs', p.pool) FROM (SELECT DISTINCT pool FROM inserted_jobs) AS p;
    IF EXISTS (SELECT 1 FROM inserted_jobs WHERE state = 'queued' AND priority > 0) THEN
        PERFORM nextval('kiroku.queue_epoch');
    END IF;
    RETURN NULL;
END
$$;

-- A queued job whose run_after an UPDATE moves ahead becomes scheduled, after the update.
CREATE FUNCTION kiroku.schedule_deferred_job() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE kiroku.jobs SET state = 'scheduled' WHERE id = NEW.id AND state = 'queued';
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION kiroku.schedule_deferred_job() IS 'Trigger: a queued job whose run_after was moved ahead becomes scheduled.';
REVOKE ALL ON FUNCTION kiroku.schedule_deferred_job() FROM PUBLIC;
DROP TRIGGER jobs_schedule_deferred ON kiroku.jobs;
CREATE TRIGGER jobs_schedule_deferred AFTER UPDATE OF run_after ON kiroku.jobs
    FOR EACH ROW WHEN (NEW.state = 'queued' AND NEW.run_after > now()) EXECUTE FUNCTION kiroku.schedule_deferred_job();

-- The claim, as in 0010, starting after the session's cursor when it still holds.
CREATE OR REPLACE FUNCTION kiroku.claim(worker_id text, pool text, max_jobs integer, lease interval, max_bytes bigint DEFAULT 67108864)
RETURNS TABLE (job_id bigint, attempt integer, lease_token text, model text, image bytea, image_uri text, enqueued_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    new_token text := encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'hex');
    new_token_hash bytea := sha256(convert_to(new_token, 'UTF8'));
    epoch bigint := (SELECT e.last_value + e.is_called::integer FROM kiroku.queue_epoch AS e);
    -- pool, epoch, -priority and id of the last job claimed, milliseconds since 1970 when the scan began at the head
    saved text[] := regexp_match(coalesce(current_setting('kiroku.claim_cursor', true), ''),
                                 '^([a-z0-9_-]{1,63}) ([0-9]{1,18}) (-?[0-9]{1,10}) ([0-9]{1,18}) ([0-9]{1,15})$');
    now_ms bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    head_ms bigint := now_ms;
    after_rank bigint := -9223372036854775808;
    after_id bigint := 0;
    claimed integer := 0;
    r record;
BEGIN
    PERFORM kiroku.check_lease('kiroku.claim', claim.lease);
    IF claim.worker_id IS NULL OR claim.pool IS NULL OR claim.max_jobs IS NULL OR claim.max_bytes IS NULL THEN
        RAISE EXCEPTION 'kiroku.claim: worker_id, pool, max_jobs and max_bytes must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF saved[1] = claim.pool AND saved[2]::bigint = epoch AND saved[5]::bigint BETWEEN now_ms - 100 AND now_ms THEN
        after_rank := saved[3]::bigint;
        after_id := saved[4]::bigint;
        head_ms := saved[5]::bigint;
    END IF;
    FOR r IN
        WITH candidates AS MATERIALIZED (
            SELECT j.id, j.priority, coalesce(j.image_size, 0) AS size
            FROM kiroku.jobs AS j
            WHERE j.state = 'queued'
              AND j.pool = claim.pool
              AND (-j.priority::bigint, j.id) > (after_rank, after_id)
              AND j.run_after <= now()
            ORDER BY -j.priority::bigint, j.id
            LIMIT greatest(least(claim.max_jobs, 1000), 0)
            FOR UPDATE SKIP LOCKED
        ),
        picked AS MATERIALIZED (
            SELECT c.id
            FROM (SELECT c.id, row_number() OVER w AS n, sum(c.size) OVER w AS upto
                  FROM candidates AS c WINDOW w AS (ORDER BY c.priority DESC, c.id)) AS c
            WHERE c.n = 1 OR c.upto <= claim.max_bytes
        ),
        claimed_jobs AS (
            UPDATE kiroku.jobs AS j
            SET state = 'running',
                attempt = j.attempt + 1,
                worker_id = claim.worker_id,
                lease_token_hash = new_token_hash,
                lease_expires_at = now() + claim.lease,
                started_at = now()
            WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
            RETURNING j.id, j.attempt, j.model, j.image_inline, j.image_uri, j.enqueued_at, j.priority
        )
        SELECT c.id, c.attempt, c.model::text AS model,
               CASE WHEN c.image_inline THEN (SELECT i.image FROM kiroku.job_images AS i WHERE i.job_id = c.id) END AS image,
               c.image_uri::text AS image_uri, c.enqueued_at, c.priority
        FROM claimed_jobs AS c
        ORDER BY c.priority DESC, c.id
    LOOP
        job_id := r.id;
        attempt := r.attempt;
        lease_token := new_token;
        model := r.model;
        image := r.image;
        image_uri := r.image_uri;
        enqueued_at := r.enqueued_at;
        RETURN NEXT;
        claimed := claimed + 1;
        after_rank := -r.priority::bigint;
        after_id := r.id;
    END LOOP;
    -- A full batch at priority 0 or above leaves a cursor; anything else starts the next claim at the head.
    PERFORM set_config('kiroku.claim_cursor',
        CASE WHEN claimed = claim.max_jobs AND after_rank <= 0
             THEN concat_ws(' ', claim.pool, epoch, after_rank, after_id, head_ms) ELSE '' END, false);
END
$$;

-- As in 0012, with the ids announced here when they fit one notification.

CREATE OR REPLACE FUNCTION kiroku.complete_many(job_ids bigint[], lease_tokens text[], results jsonb[])
RETURNS TABLE (job_id bigint, stored boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    finished bigint[];
BEGIN
    PERFORM kiroku.check_leases('kiroku.complete', complete_many.job_ids, complete_many.lease_tokens);
    IF complete_many.results IS NULL OR cardinality(complete_many.results) <> cardinality(complete_many.job_ids) THEN
        RAISE EXCEPTION 'kiroku.complete: results must be an array as long as job_ids' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(complete_many.results) AS r WHERE r IS NULL OR jsonb_typeof(r) <> 'object') THEN
        RAISE EXCEPTION 'kiroku.complete: every result must be a JSON object, not NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH input AS MATERIALIZED (
        SELECT t.job_id, sha256(convert_to(t.token, 'UTF8')) AS token_hash, t.result, t.n
        FROM unnest(complete_many.job_ids, complete_many.lease_tokens, complete_many.results)
             WITH ORDINALITY AS t(job_id, token, result, n)
    ),
    done AS (
        UPDATE kiroku.jobs AS j
        SET state = 'succeeded',
            result = input.result,
            timings = input.result -> 'timings',
            finished_at = now(),
            lease_expires_at = NULL,
            lease_token_hash = NULL,
            error = NULL
        FROM input
        WHERE j.id = ANY (complete_many.job_ids)
          AND j.id = input.job_id
          AND j.state = 'running'
          AND j.lease_token_hash = input.token_hash
        RETURNING j.id, input.n
    )
    SELECT array_agg(done.id ORDER BY done.n) INTO finished FROM done;
    IF cardinality(finished) <= 400 THEN
        PERFORM pg_notify('kiroku_results', array_to_string(finished, ','));
    ELSIF finished IS NOT NULL THEN
        PERFORM kiroku.announce_finished(finished);
    END IF;
    RETURN QUERY
    SELECT t.id, coalesce(t.id = ANY (finished), false)
    FROM unnest(complete_many.job_ids) WITH ORDINALITY AS t(id, n)
    ORDER BY t.n;
END
$$;

-- As in 0012, a retry scheduled here rather than by the trigger.
CREATE OR REPLACE FUNCTION kiroku.fail(job_id bigint, lease_token text, error text, retryable boolean, refused boolean DEFAULT false)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    new_state text;
BEGIN
    IF fail.job_id IS NULL OR fail.lease_token IS NULL OR fail.error IS NULL OR fail.retryable IS NULL OR fail.refused IS NULL THEN
        RAISE EXCEPTION 'kiroku.fail: job_id, lease_token, error, retryable and refused must not be NULL'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    UPDATE kiroku.jobs AS j
    SET state       = CASE WHEN retry.again THEN 'scheduled' ELSE 'failed' END,
        error_kind  = CASE WHEN fail.refused THEN 'refused' WHEN NOT fail.retryable THEN 'permanent'
                           WHEN NOT retry.again THEN 'exhausted' END,
        run_after   = CASE WHEN retry.again THEN now() + kiroku.retry_delay(j.attempt - j.attempt_base) ELSE j.run_after END,
        finished_at = CASE WHEN retry.again THEN NULL ELSE now() END,
        error = left(fail.error, 1000),
        lease_expires_at = NULL,
        lease_token_hash = NULL
    FROM (SELECT fail.retryable AND NOT fail.refused AND f.attempt - f.attempt_base < f.max_attempts AS again
          FROM kiroku.jobs AS f WHERE f.id = fail.job_id) AS retry
    WHERE j.id = fail.job_id
      AND j.state = 'running'
      AND j.lease_token_hash = sha256(convert_to(fail.lease_token, 'UTF8'))
    RETURNING j.state INTO new_state;
    IF new_state = 'failed' THEN
        PERFORM kiroku.announce_finished(ARRAY[fail.job_id]);
    END IF;
    RETURN new_state;
END
$$;
