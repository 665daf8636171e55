-- 0002: the queue protocol as SQL functions, so producers and workers in any language share it.
--
-- Every state transition is guarded by the current state, and those a worker makes also by its
-- worker id and attempt number (fencing): a worker whose lease was taken away changes nothing.
-- The functions are SECURITY DEFINER with a fixed search_path; 0003 grants them per role.

-- Notifications --------------------------------------------------------------------------------

-- One NOTIFY per inserting statement and pool (payload: the pool), however many rows it inserts.
CREATE FUNCTION kiroku.notify_jobs_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kiroku_jobs', p.pool) FROM (SELECT DISTINCT pool FROM inserted_jobs) AS p;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_inserted
    AFTER INSERT ON kiroku.jobs
    REFERENCING NEW TABLE AS inserted_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION kiroku.notify_jobs_inserted();

-- A finished job (succeeded, failed, cancelled) is announced on kiroku_results with its id.
CREATE FUNCTION kiroku.notify_job_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('kiroku_results', NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_finished
    AFTER UPDATE OF state ON kiroku.jobs
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state AND NEW.state IN ('succeeded', 'failed', 'cancelled'))
    EXECUTE FUNCTION kiroku.notify_job_finished();

-- Enqueue --------------------------------------------------------------------------------------

-- Enqueues many jobs in one set-based INSERT (one trigger firing, one NOTIFY per pool): the one
-- implementation behind enqueue and enqueue_uri. Element i of each array describes job i; each
-- job has an image or a URI. Returns each job's id by ordinal, and whether this call created it:
-- a job whose idempotency key an unfinished job already holds (or an earlier element of the
-- same call) gets that job's id and created = false.
CREATE FUNCTION kiroku.enqueue_many(
    images bytea[], uris text[], models text[], priorities integer[], pools text[],
    idempotency_keys text[], run_afters timestamptz[])
RETURNS TABLE (ordinal integer, job_id bigint, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    total integer := coalesce(cardinality(images), 0);
    ids bigint[] := array_fill(NULL::bigint, ARRAY[total]);
    fresh boolean[] := array_fill(false, ARRAY[total]);
    todo integer[] := ARRAY(SELECT generate_series(1, total));
    new_ids bigint[];
    inserted_ids bigint[];
BEGIN
    IF coalesce(cardinality(uris), 0) <> total OR coalesce(cardinality(models), 0) <> total
       OR coalesce(cardinality(priorities), 0) <> total OR coalesce(cardinality(pools), 0) <> total
       OR coalesce(cardinality(idempotency_keys), 0) <> total OR coalesce(cardinality(run_afters), 0) <> total THEN
        RAISE EXCEPTION 'kiroku.enqueue_many: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(images, uris) AS t(image, uri)
               WHERE (t.image IS NULL OR length(t.image) = 0) AND t.uri IS NULL) THEN
        RAISE EXCEPTION 'kiroku.enqueue: a job has an empty image and no URI' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(images, uris) AS t(image, uri)
               WHERE t.image IS NULL AND t.uri !~ '^(file|https?)://') THEN
        RAISE EXCEPTION 'kiroku.enqueue_uri: unsupported image URI %',
            (SELECT quote_literal(t.uri) FROM unnest(images, uris) AS t(image, uri)
             WHERE t.image IS NULL AND t.uri !~ '^(file|https?)://' LIMIT 1)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Use a file://, http:// or https:// URI.';
    END IF;

    -- Usually one pass. Another pass only when a job holding a key finished between the
    -- INSERT (which saw the key taken) and the lookup (which no longer finds it unfinished).
    WHILE cardinality(todo) > 0 LOOP
        WITH input AS MATERIALIZED (
            SELECT n::integer AS n, nextval(pg_get_serial_sequence('kiroku.jobs', 'id')) AS new_id,
                   images[n] AS image, uris[n] AS uri, idempotency_keys[n] AS key
            FROM unnest(todo) AS n
        ),
        inserted AS (
            INSERT INTO kiroku.jobs AS j
                   (id, image_inline, image_uri, content_hash, model, priority, pool, idempotency_key, run_after)
            OVERRIDING SYSTEM VALUE
            SELECT i.new_id, i.image IS NOT NULL, CASE WHEN i.image IS NULL THEN i.uri END, sha256(i.image),
                   coalesce(models[i.n], 'default'), coalesce(priorities[i.n], 0), coalesce(pools[i.n], 'cpu'),
                   i.key, coalesce(run_afters[i.n], now())
            FROM input AS i
            ORDER BY i.n
            ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL AND state IN ('queued', 'running')
                DO NOTHING
            RETURNING j.id
        ),
        stored_images AS (
            INSERT INTO kiroku.job_images (job_id, image)
            SELECT i.new_id, i.image FROM input AS i
            WHERE i.image IS NOT NULL AND i.new_id IN (SELECT inserted.id FROM inserted)
        )
        SELECT array_agg(CASE WHEN i.new_id IN (SELECT inserted.id FROM inserted) THEN i.new_id END ORDER BY i.n)
        INTO new_ids
        FROM input AS i;
        inserted_ids := new_ids;

        -- Jobs not inserted take the id of the unfinished job holding their key (visible now).
        SELECT array_agg(coalesce(t.new_id, (
                   SELECT j.id FROM kiroku.jobs AS j
                   WHERE j.idempotency_key = idempotency_keys[t.n] AND j.state IN ('queued', 'running')))
               ORDER BY t.n)
        INTO new_ids
        FROM unnest(todo, new_ids) AS t(n, new_id);

        FOR i IN 1..cardinality(todo) LOOP
            ids[todo[i]] := new_ids[i];
            fresh[todo[i]] := inserted_ids[i] IS NOT NULL;
        END LOOP;
        todo := ARRAY(SELECT t.n FROM unnest(todo, new_ids) AS t(n, new_id) WHERE t.new_id IS NULL);
    END LOOP;

    RETURN QUERY SELECT t.n::integer, t.id, t.fresh FROM unnest(ids, fresh) WITH ORDINALITY AS t(id, fresh, n);
END
$$;

CREATE FUNCTION kiroku.enqueue(
    image bytea, model text DEFAULT 'default', priority integer DEFAULT 0, pool text DEFAULT NULL,
    idempotency_key text DEFAULT NULL, run_after timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.job_id
    FROM kiroku.enqueue_many(ARRAY[enqueue.image], ARRAY[NULL::text], ARRAY[enqueue.model],
                             ARRAY[enqueue.priority], ARRAY[enqueue.pool], ARRAY[enqueue.idempotency_key],
                             ARRAY[enqueue.run_after]) AS e
$$;

CREATE FUNCTION kiroku.enqueue_uri(
    uri text, model text DEFAULT 'default', priority integer DEFAULT 0, pool text DEFAULT NULL,
    idempotency_key text DEFAULT NULL, run_after timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.job_id
    FROM kiroku.enqueue_many(ARRAY[NULL::bytea], ARRAY[coalesce(enqueue_uri.uri, '')], ARRAY[enqueue_uri.model],
                             ARRAY[enqueue_uri.priority], ARRAY[enqueue_uri.pool], ARRAY[enqueue_uri.idempotency_key],
                             ARRAY[enqueue_uri.run_after]) AS e
$$;

-- Claim ----------------------------------------------------------------------------------------

-- Claims up to max_jobs runnable jobs of a pool: highest priority first, then oldest.
-- The MATERIALIZED CTE pins the LIMIT: the planner cannot re-evaluate it per outer row.
-- Plans inside functions are generic (the LIMIT is unknown), so the UPDATE is driven by
-- `id = ANY (ARRAY(...))` and the image by a correlated subquery: both primary-key lookups,
-- where a join would hash the whole table. The same pattern recurs in rescue_expired and prune.
-- PL/pgSQL rather than SQL: it caches the plan, where a SQL function is planned on every call.
CREATE FUNCTION kiroku.claim(worker_id text, pool text, max_jobs integer, lease interval)
RETURNS TABLE (job_id bigint, attempt integer, model text, image bytea, image_uri text, enqueued_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH picked AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state = 'queued'
          AND j.pool = claim.pool
          AND j.run_after <= now()
        ORDER BY j.priority DESC, j.id
        LIMIT greatest(claim.max_jobs, 0)
        FOR UPDATE SKIP LOCKED
    ),
    claimed AS (
        UPDATE kiroku.jobs AS j
        SET state = 'running',
            attempt = j.attempt + 1,
            worker_id = claim.worker_id,
            lease_expires_at = now() + claim.lease,
            started_at = now()
        WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
        RETURNING j.id, j.attempt, j.model, j.image_inline, j.image_uri, j.enqueued_at, j.priority
    )
    SELECT c.id, c.attempt, c.model,
           CASE WHEN c.image_inline THEN (SELECT i.image FROM kiroku.job_images AS i WHERE i.job_id = c.id) END,
           c.image_uri, c.enqueued_at
    FROM claimed AS c
    ORDER BY c.priority DESC, c.id;
END
$$;

-- Extends the leases a worker still holds; also renews the worker's last_seen.
CREATE FUNCTION kiroku.heartbeat(worker_id text, job_ids bigint[], lease interval)
RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH seen AS (
        UPDATE kiroku.workers AS w SET last_seen = now() WHERE w.id = heartbeat.worker_id
    ),
    extended AS (
        UPDATE kiroku.jobs AS j
        SET lease_expires_at = now() + heartbeat.lease
        WHERE j.id = ANY (heartbeat.job_ids)
          AND j.state = 'running'
          AND j.worker_id = heartbeat.worker_id
        RETURNING 1
    )
    SELECT count(*)::integer FROM extended
$$;

-- Finish ---------------------------------------------------------------------------------------

-- Stores the results of a batch in one set-based UPDATE: the one implementation behind complete.
-- PL/pgSQL for its plan cache, as claim.
-- For each job, stored = false, changing nothing, when the worker no longer holds that attempt.
-- A lease that expired but was not yet rescued still counts as held: nobody else has the job.
CREATE FUNCTION kiroku.complete_many(worker_id text, job_ids bigint[], attempts integer[], results jsonb[])
RETURNS TABLE (job_id bigint, stored boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH input AS MATERIALIZED (
        SELECT t.job_id, t.attempt, t.result, t.n
        FROM unnest(complete_many.job_ids, complete_many.attempts, complete_many.results)
             WITH ORDINALITY AS t(job_id, attempt, result, n)
    ),
    done AS (
        UPDATE kiroku.jobs AS j
        SET state = 'succeeded',
            result = input.result,
            timings = input.result -> 'timings',
            finished_at = now(),
            lease_expires_at = NULL,
            error = NULL
        FROM input
        WHERE j.id = ANY (complete_many.job_ids)
          AND j.id = input.job_id
          AND j.state = 'running'
          AND j.worker_id = complete_many.worker_id
          AND j.attempt = input.attempt
        RETURNING j.id, j.attempt
    )
    SELECT input.job_id, EXISTS (SELECT 1 FROM done WHERE done.id = input.job_id AND done.attempt = input.attempt)
    FROM input
    ORDER BY input.n;
END
$$;

-- Stores one job's result; false, changing nothing, when the worker no longer holds that attempt.
CREATE FUNCTION kiroku.complete(job_id bigint, worker_id text, attempt integer, result jsonb)
RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT c.stored
    FROM kiroku.complete_many(complete.worker_id, ARRAY[complete.job_id], ARRAY[complete.attempt],
                              ARRAY[complete.result]) AS c
$$;

-- The wait before retry n: 2^n seconds, capped at 10 minutes, plus up to 25% random jitter.
CREATE FUNCTION kiroku.retry_delay(attempt integer) RETURNS interval
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT make_interval(secs => least(600.0::float8, power(2.0::float8, greatest(retry_delay.attempt, 0)))
                                 * (1.0 + random() * 0.25))
$$;

-- Records a failed attempt and returns the job's new state: 'queued' (retry after a backoff) or
-- 'failed'. Retryable errors are retried until max_attempts, then fail as 'exhausted'; others
-- fail at once as 'permanent'. NULL, changing nothing, when the worker no longer holds the attempt.
CREATE FUNCTION kiroku.fail(job_id bigint, worker_id text, attempt integer, error text, retryable boolean)
RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH failed AS (
        UPDATE kiroku.jobs AS j
        SET state       = CASE WHEN fail.retryable AND j.attempt < j.max_attempts THEN 'queued' ELSE 'failed' END,
            error_kind  = CASE WHEN NOT fail.retryable THEN 'permanent'
                               WHEN j.attempt >= j.max_attempts THEN 'exhausted' END,
            run_after   = CASE WHEN fail.retryable AND j.attempt < j.max_attempts
                               THEN now() + kiroku.retry_delay(j.attempt) ELSE j.run_after END,
            finished_at = CASE WHEN fail.retryable AND j.attempt < j.max_attempts THEN NULL ELSE now() END,
            error = fail.error,
            lease_expires_at = NULL
        WHERE j.id = fail.job_id
          AND j.state = 'running'
          AND j.worker_id = fail.worker_id
          AND j.attempt = fail.attempt
        RETURNING j.state
    )
    SELECT state FROM failed
$$;

-- Running jobs whose lease expired go back to queued, or fail as 'exhausted' when out of
-- attempts. Safe and cheap when many workers call it: it reads the small running-rows index and
-- skips rows another rescuer (or a finishing worker) has locked.
CREATE FUNCTION kiroku.rescue_expired() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rescued integer;
    requeued_pools text[];
BEGIN
    WITH expired AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state = 'running' AND j.lease_expires_at < now()
        FOR UPDATE SKIP LOCKED
    ),
    updated AS (
        UPDATE kiroku.jobs AS j
        SET state       = CASE WHEN j.attempt < j.max_attempts THEN 'queued' ELSE 'failed' END,
            error_kind  = CASE WHEN j.attempt >= j.max_attempts THEN 'exhausted' END,
            finished_at = CASE WHEN j.attempt < j.max_attempts THEN NULL ELSE now() END,
            run_after   = now(),
            error = format('lease expired: worker %s stopped renewing attempt %s', j.worker_id, j.attempt),
            lease_expires_at = NULL
        WHERE j.id = ANY (ARRAY(SELECT expired.id FROM expired))
        RETURNING j.pool, j.state
    )
    SELECT count(*), array_agg(DISTINCT u.pool) FILTER (WHERE u.state = 'queued')
    INTO rescued, requeued_pools
    FROM updated AS u;
    PERFORM pg_notify('kiroku_jobs', p) FROM unnest(requeued_pools) AS p;
    RETURN rescued;
END
$$;

-- Administration -------------------------------------------------------------------------------

-- Cancels a queued or running job; a worker still running it is fenced out. False otherwise.
CREATE FUNCTION kiroku.cancel(job_id bigint) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH cancelled AS (
        UPDATE kiroku.jobs AS j
        SET state = 'cancelled', finished_at = now(), lease_expires_at = NULL
        WHERE j.id = cancel.job_id AND j.state IN ('queued', 'running')
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM cancelled)
$$;

-- Puts a failed or cancelled job back in the queue with fresh attempts. False when the job is not
-- failed or cancelled, or when another unfinished job now holds its idempotency key.
CREATE FUNCTION kiroku.requeue(job_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    job_pool text;
BEGIN
    UPDATE kiroku.jobs AS j
    SET state = 'queued', attempt = 0, run_after = now(), finished_at = NULL, started_at = NULL,
        error = NULL, error_kind = NULL, result = NULL, timings = NULL, lease_expires_at = NULL
    WHERE j.id = requeue.job_id AND j.state IN ('failed', 'cancelled')
    RETURNING j.pool INTO job_pool;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('kiroku_jobs', job_pool);
    RETURN true;
EXCEPTION WHEN unique_violation THEN
    RETURN false;
END
$$;

-- Deletes up to max_rows jobs that finished before now() - older_than; returns how many.
-- Call it repeatedly (each call its own transaction) to prune a large history in batches.
CREATE FUNCTION kiroku.prune(older_than interval, max_rows integer DEFAULT 10000) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH doomed AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state IN ('succeeded', 'failed', 'cancelled')
          AND j.finished_at < now() - prune.older_than
        ORDER BY j.finished_at
        LIMIT greatest(prune.max_rows, 0)
        FOR UPDATE SKIP LOCKED
    ),
    deleted AS (
        DELETE FROM kiroku.jobs AS j WHERE j.id = ANY (ARRAY(SELECT doomed.id FROM doomed)) RETURNING 1
    )
    SELECT count(*)::integer FROM deleted
$$;

-- Workers --------------------------------------------------------------------------------------

-- Records a worker process start (id unique per start).
CREATE FUNCTION kiroku.register_worker(worker_id text, host text, pool text, model text, cores integer, version text)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO kiroku.workers AS w (id, host, pool, model, cores, version)
    VALUES (register_worker.worker_id, register_worker.host, register_worker.pool,
            register_worker.model, register_worker.cores, register_worker.version)
    ON CONFLICT (id) DO UPDATE SET last_seen = now(), stopped_at = NULL
$$;

-- Marks a worker as stopped.
CREATE FUNCTION kiroku.deregister_worker(worker_id text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE kiroku.workers AS w SET stopped_at = now(), last_seen = now() WHERE w.id = deregister_worker.worker_id
$$;
