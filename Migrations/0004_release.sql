-- 0004: a worker hands back jobs it claimed but will not start (graceful shutdown): they return
-- to the queue at once, the attempt the claim took is not counted, and the pool is notified so
-- another worker picks them up within milliseconds instead of after the lease.

-- Returns how many of the given (job, attempt) pairs were handed back. Fenced like complete: a
-- pair the worker no longer holds (finished, rescued, claimed again) is left alone.
CREATE FUNCTION kiroku.release(worker_id text, job_ids bigint[], attempts integer[])
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    released integer;
    released_pools text[];
BEGIN
    WITH input AS MATERIALIZED (
        SELECT t.job_id, t.attempt FROM unnest(release.job_ids, release.attempts) AS t(job_id, attempt)
    ),
    handed_back AS (
        UPDATE kiroku.jobs AS j
        SET state = 'queued',
            attempt = j.attempt - 1,
            worker_id = NULL,
            lease_expires_at = NULL,
            started_at = NULL,
            run_after = now()
        FROM input
        WHERE j.id = ANY (release.job_ids)
          AND j.id = input.job_id
          AND j.attempt = input.attempt
          AND j.state = 'running'
          AND j.worker_id = release.worker_id
        RETURNING j.pool
    )
    SELECT count(*)::integer, array_agg(DISTINCT h.pool) INTO released, released_pools FROM handed_back AS h;
    PERFORM pg_notify('kiroku_jobs', p.pool) FROM unnest(released_pools) AS p(pool);
    RETURN released;
END
$$;

REVOKE ALL ON FUNCTION kiroku.release(text, bigint[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kiroku.release(text, bigint[], integer[]) TO kiroku_worker, kiroku_admin;
