-- 0012: finished jobs are announced once per statement, not once per row (issue 22).
-- Since 0002 a row trigger sent one NOTIFY on kiroku_results per finished job: with batches of
-- 32 it cost about a tenth of the queue's throughput (each pg_notify is queued, checked for
-- duplicates and sent at commit on its own). The functions that finish jobs (complete_many and
-- complete, fail, cancel, rescue_expired) now send one notification per statement carrying the
-- ids they finished, comma-separated in their order, at most 400 ids per notification (a payload
-- stays under PostgreSQL's 8,000 bytes). A listener splits the payload on commas; one finished
-- job still sends just its id. A job changed by hand (an admin's UPDATE) is not announced.

SET LOCAL ROLE kiroku_owner;

DROP TRIGGER jobs_notify_finished ON kiroku.jobs;
DROP FUNCTION kiroku.notify_job_finished();

CREATE FUNCTION kiroku.announce_finished(job_ids bigint[]) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_notify('kiroku_results', string_agg(t.id::text, ',' ORDER BY t.n))
    FROM unnest(announce_finished.job_ids) WITH ORDINALITY AS t(id, n)
    GROUP BY (t.n - 1) / 400;
END
$$;
COMMENT ON FUNCTION kiroku.announce_finished(bigint[]) IS 'NOTIFY kiroku_results with the finished jobs'' ids, comma-separated, 400 per notification.';
REVOKE ALL ON FUNCTION kiroku.announce_finished(bigint[]) FROM PUBLIC;

-- As in 0009, the finished ids announced.
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
    IF finished IS NOT NULL THEN
        PERFORM kiroku.announce_finished(finished);
    END IF;
    RETURN QUERY
    SELECT t.id, coalesce(t.id = ANY (finished), false)
    FROM unnest(complete_many.job_ids) WITH ORDINALITY AS t(id, n)
    ORDER BY t.n;
END
$$;

-- As in 0009 (the retry is scheduled by 0011's trigger), a final failure announced.
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
    SET state       = CASE WHEN retry.again THEN 'queued' ELSE 'failed' END,
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

-- As in 0011, the cancelled job announced.
CREATE OR REPLACE FUNCTION kiroku.cancel(job_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE kiroku.jobs AS j
    SET state = 'cancelled', finished_at = now(), lease_expires_at = NULL, lease_token_hash = NULL
    WHERE j.id = cancel.job_id AND j.state IN ('queued', 'scheduled', 'running')
      AND (j.enqueued_by = session_user OR pg_has_role(session_user, 'kiroku_admin', 'MEMBER'));
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM kiroku.announce_finished(ARRAY[cancel.job_id]);
    RETURN true;
END
$$;

-- As in 0009, the jobs out of attempts announced.
CREATE OR REPLACE FUNCTION kiroku.rescue_expired() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rescued integer;
    requeued_pools text[];
    failed_ids bigint[];
BEGIN
    WITH expired AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state = 'running' AND j.lease_expires_at < now()
        FOR UPDATE SKIP LOCKED
    ),
    updated AS (
        UPDATE kiroku.jobs AS j
        SET state       = CASE WHEN j.attempt - j.attempt_base < j.max_attempts THEN 'queued' ELSE 'failed' END,
            error_kind  = CASE WHEN j.attempt - j.attempt_base >= j.max_attempts THEN 'exhausted' END,
            finished_at = CASE WHEN j.attempt - j.attempt_base < j.max_attempts THEN NULL ELSE now() END,
            run_after   = now(),
            error = format('lease expired: worker %s stopped renewing attempt %s', j.worker_id, j.attempt),
            lease_expires_at = NULL,
            lease_token_hash = NULL
        WHERE j.id = ANY (ARRAY(SELECT expired.id FROM expired))
        RETURNING j.id, j.pool, j.state
    )
    SELECT count(*), array_agg(DISTINCT u.pool) FILTER (WHERE u.state = 'queued'),
           array_agg(u.id ORDER BY u.id) FILTER (WHERE u.state = 'failed')
    INTO rescued, requeued_pools, failed_ids
    FROM updated AS u;
    PERFORM pg_notify('kiroku_jobs', p) FROM unnest(requeued_pools) AS p;
    IF failed_ids IS NOT NULL THEN
        PERFORM kiroku.announce_finished(failed_ids);
    END IF;
    RETURN rescued;
END
$$;
