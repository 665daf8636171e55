-- 0011: jobs that are not yet due live apart from runnable ones (issue 22).
-- A job whose run_after lies ahead (a delayed job, a retry in backoff) used to wait as 'queued',
-- at the head of the runnable index when its priority was high: every claim walked past it, and
-- 100,000 of them made an empty claim 20 times slower. Such a job is now 'scheduled':
-- * on INSERT (through kiroku.enqueue* or a plain INSERT) with run_after after now(), and on an
--   UPDATE that moves a queued job's run_after ahead (kiroku.fail's backoff), a BEFORE trigger
--   sets the state; its WHEN clause keeps the trigger from running for due jobs;
-- * kiroku.promote_due() moves due scheduled jobs to 'queued' in batches (SKIP LOCKED, so any
--   number of workers may run it at once) and wakes the pools' workers; it is a duty of every
--   worker's maintenance. Priority and order among due jobs are the claim's, as before.
-- * due_at records when a job first comes due (its enqueue time, or its run_after when that was
--   ahead), so that arrivals are counted when work can start, not when it was announced.
-- What still counts as unfinished (idempotency keys, cancel, prune's shadow guard) includes
-- 'scheduled'; queue_depth shows scheduled jobs apart, with when the next one comes due.

SET LOCAL ROLE kiroku_owner;

ALTER TABLE kiroku.jobs DROP CONSTRAINT jobs_state_valid;
ALTER TABLE kiroku.jobs ADD CONSTRAINT jobs_state_valid
    CHECK (state IN ('scheduled', 'queued', 'running', 'succeeded', 'failed', 'cancelled')) NOT VALID;
ALTER TABLE kiroku.jobs VALIDATE CONSTRAINT jobs_state_valid;

-- Jobs enqueued before this migration keep a NULL due_at: readers take enqueued_at for them.
ALTER TABLE kiroku.jobs ADD COLUMN due_at timestamptz;
ALTER TABLE kiroku.jobs ALTER COLUMN due_at SET DEFAULT now();
COMMENT ON COLUMN kiroku.jobs.due_at IS 'When the job first came due: enqueued_at, or run_after when that lay ahead.';
-- Arrivals by due time; minmax-multi keeps the summary tight though scheduled jobs arrive out of order.
CREATE INDEX jobs_due_at ON kiroku.jobs USING brin (due_at timestamptz_minmax_multi_ops);

-- Promotion reads the scheduled jobs by due time, and nothing else does.
CREATE INDEX jobs_scheduled ON kiroku.jobs (run_after) WHERE state = 'scheduled';

-- An idempotency key is held by any unfinished job, scheduled ones included.
DROP INDEX kiroku.jobs_idempotency_key;
CREATE UNIQUE INDEX jobs_idempotency_key ON kiroku.jobs (enqueued_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL AND state IN ('queued', 'scheduled', 'running');

CREATE FUNCTION kiroku.schedule_future_job() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NEW.state = 'queued' THEN
        NEW.state := 'scheduled';
    END IF;
    IF TG_OP = 'INSERT' THEN
        NEW.due_at := NEW.run_after;
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION kiroku.schedule_future_job() FROM PUBLIC;

CREATE TRIGGER jobs_schedule_inserted BEFORE INSERT ON kiroku.jobs
    FOR EACH ROW WHEN (NEW.run_after > now()) EXECUTE FUNCTION kiroku.schedule_future_job();
CREATE TRIGGER jobs_schedule_deferred BEFORE UPDATE OF run_after ON kiroku.jobs
    FOR EACH ROW WHEN (NEW.state = 'queued' AND NEW.run_after > now()) EXECUTE FUNCTION kiroku.schedule_future_job();

-- Jobs already waiting for a later time.
UPDATE kiroku.jobs SET state = 'scheduled' WHERE state = 'queued' AND run_after > now();

CREATE FUNCTION kiroku.promote_due(max_jobs integer DEFAULT 1000) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    promoted integer;
    promoted_pools text[];
BEGIN
    IF promote_due.max_jobs IS NULL OR promote_due.max_jobs NOT BETWEEN 1 AND 100000 THEN
        RAISE EXCEPTION 'kiroku.promote_due: max_jobs must be between 1 and 100000, not %', promote_due.max_jobs
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    WITH due AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state = 'scheduled' AND j.run_after <= now()
        ORDER BY j.run_after
        LIMIT promote_due.max_jobs
        FOR UPDATE SKIP LOCKED
    ),
    promoted_jobs AS (
        UPDATE kiroku.jobs AS j
        SET state = 'queued'
        WHERE j.id = ANY (ARRAY(SELECT due.id FROM due))
        RETURNING j.pool
    )
    SELECT count(*)::integer, array_agg(DISTINCT p.pool) INTO promoted, promoted_pools FROM promoted_jobs AS p;
    PERFORM pg_notify('kiroku_jobs', p) FROM unnest(promoted_pools) AS p;
    RETURN promoted;
END
$$;
COMMENT ON FUNCTION kiroku.promote_due(integer) IS 'Moves up to max_jobs due scheduled jobs to queued, earliest first; returns how many.';
REVOKE ALL ON FUNCTION kiroku.promote_due(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kiroku.promote_due(integer) TO kiroku_worker, kiroku_admin;

-- queue_depth: queued is still every job waiting (ready + scheduled); ready is what a claim can
-- take now; the oldest age is of ready work, counted from when it came due.
CREATE OR REPLACE VIEW kiroku.queue_depth AS
SELECT pool,
       count(*) FILTER (WHERE state IN ('queued', 'scheduled'))        AS queued,
       count(*) FILTER (WHERE state = 'queued')                        AS ready,
       count(*) FILTER (WHERE state = 'running')                       AS running,
       coalesce(now() - min(greatest(enqueued_at, run_after)) FILTER (WHERE state = 'queued'),
                interval '0')                                          AS oldest_queued_age,
       count(*) FILTER (WHERE state = 'scheduled')                     AS scheduled,
       min(run_after) FILTER (WHERE state = 'scheduled')               AS next_due_at,
       count(*) FILTER (WHERE state = 'scheduled' AND run_after < now() + interval '1 hour') AS due_within_hour
FROM kiroku.jobs
WHERE state IN ('queued', 'scheduled', 'running')
GROUP BY pool;

-- A job's wait starts when it came due (a retry's when its backoff ended), not when it was enqueued.
CREATE OR REPLACE VIEW kiroku.recent_throughput AS
SELECT pool,
       count(*)                                                       AS finished,
       count(*) FILTER (WHERE state = 'succeeded')                    AS succeeded,
       count(*) FILTER (WHERE state = 'failed')                       AS failed,
       (count(*) / 300.0)::float8                                     AS jobs_per_second,
       avg(extract(epoch FROM finished_at - started_at))::float8      AS mean_service_seconds,
       avg(extract(epoch FROM started_at - greatest(enqueued_at, run_after)))::float8 AS mean_wait_seconds
FROM kiroku.jobs
WHERE state IN ('succeeded', 'failed', 'cancelled')
  AND finished_at >= now() - interval '5 minutes'
  AND started_at IS NOT NULL
GROUP BY pool;

-- As in 0009, with 'scheduled' among the unfinished states.
CREATE OR REPLACE FUNCTION kiroku.insert_jobs(
    images bytea[], uris text[], models text[], priorities integer[], pools text[], requested_pools text[],
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
    clash record;
BEGIN
    IF coalesce(cardinality(uris), 0) <> total OR coalesce(cardinality(models), 0) <> total
       OR coalesce(cardinality(priorities), 0) <> total OR coalesce(cardinality(pools), 0) <> total
       OR coalesce(cardinality(requested_pools), 0) <> total
       OR coalesce(cardinality(idempotency_keys), 0) <> total OR coalesce(cardinality(run_afters), 0) <> total THEN
        RAISE EXCEPTION 'kiroku.enqueue_many: the arrays differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(pools) AS p WHERE p !~ '^[a-z0-9_-]{1,63}$') THEN
        RAISE EXCEPTION 'kiroku.enqueue: pool name % is not 1 to 63 characters of a-z, 0-9, _ and -',
            (SELECT quote_literal(left(p, 100)) FROM unnest(pools) AS p WHERE p !~ '^[a-z0-9_-]{1,63}$' LIMIT 1)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(images, uris) AS t(image, uri)
               WHERE (t.image IS NULL OR length(t.image) = 0) AND t.uri IS NULL) THEN
        RAISE EXCEPTION 'kiroku.enqueue: a job has an empty image and no URI' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(images, uris) AS t(image, uri) WHERE t.image IS NOT NULL AND t.uri IS NOT NULL) THEN
        RAISE EXCEPTION 'kiroku.enqueue_many: a job has both an image and a URI; give one' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(images, uris) AS t(image, uri)
               WHERE t.image IS NULL AND t.uri !~ '^(file|https?)://') THEN
        RAISE EXCEPTION 'kiroku.enqueue_uri: unsupported image URI %',
            (SELECT quote_literal(left(t.uri, 100)) FROM unnest(images, uris) AS t(image, uri)
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
                   (id, image_inline, image_uri, content_hash, image_size, model, priority, pool, idempotency_key, run_after)
            OVERRIDING SYSTEM VALUE
            SELECT i.new_id, i.image IS NOT NULL, CASE WHEN i.image IS NULL THEN i.uri END, sha256(i.image),
                   octet_length(i.image), coalesce(models[i.n], 'default'), coalesce(priorities[i.n], 0),
                   coalesce(pools[i.n], 'cpu'), i.key, coalesce(run_afters[i.n], now())
            FROM input AS i
            ORDER BY i.n
            ON CONFLICT (enqueued_by, idempotency_key) WHERE idempotency_key IS NOT NULL AND state IN ('queued', 'scheduled', 'running')
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
                   WHERE j.enqueued_by = session_user AND j.idempotency_key = idempotency_keys[t.n]
                     AND j.state IN ('queued', 'scheduled', 'running')))
               ORDER BY t.n)
        INTO new_ids
        FROM unnest(todo, new_ids) AS t(n, new_id);

        FOR i IN 1..cardinality(todo) LOOP
            ids[todo[i]] := new_ids[i];
            fresh[todo[i]] := inserted_ids[i] IS NOT NULL;
        END LOOP;
        todo := ARRAY(SELECT t.n FROM unnest(todo, new_ids) AS t(n, new_id) WHERE t.new_id IS NULL);
    END LOOP;

    -- A key names one request: the same key asking for something else is the caller's mistake.
    SELECT t.n, j.id, j.idempotency_key,
           CASE WHEN j.image_inline IS DISTINCT FROM (images[t.n] IS NOT NULL)
                     OR j.content_hash IS DISTINCT FROM sha256(images[t.n])
                     OR (images[t.n] IS NULL AND j.image_uri IS DISTINCT FROM uris[t.n]) THEN 'image'
                WHEN j.model <> coalesce(models[t.n], 'default') THEN 'model'
                WHEN requested_pools[t.n] IS NOT NULL AND j.pool <> requested_pools[t.n] THEN 'pool' END AS differs
    INTO clash
    FROM unnest(ids, fresh) WITH ORDINALITY AS t(id, is_new, n)
    JOIN kiroku.jobs AS j ON j.id = t.id
    WHERE NOT t.is_new
      AND (j.image_inline IS DISTINCT FROM (images[t.n] IS NOT NULL)
           OR j.content_hash IS DISTINCT FROM sha256(images[t.n])
           OR (images[t.n] IS NULL AND j.image_uri IS DISTINCT FROM uris[t.n])
           OR j.model <> coalesce(models[t.n], 'default')
           OR (requested_pools[t.n] IS NOT NULL AND j.pool <> requested_pools[t.n]))
    ORDER BY t.n
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'kiroku.enqueue: idempotency key % already names job %, which has another %',
            quote_literal(clash.idempotency_key), clash.id, clash.differs
            USING ERRCODE = 'unique_violation',
                  HINT = 'Reuse a key only to repeat the same request; use a new key for a new image, model or pool.';
    END IF;

    RETURN QUERY SELECT t.n::integer, t.id, t.fresh FROM unnest(ids, fresh) WITH ORDINALITY AS t(id, fresh, n);
END
$$;

CREATE OR REPLACE FUNCTION kiroku.cancel(job_id bigint) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH cancelled AS (
        UPDATE kiroku.jobs AS j
        SET state = 'cancelled', finished_at = now(), lease_expires_at = NULL, lease_token_hash = NULL
        WHERE j.id = cancel.job_id AND j.state IN ('queued', 'scheduled', 'running')
          AND (j.enqueued_by = session_user OR pg_has_role(session_user, 'kiroku_admin', 'MEMBER'))
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM cancelled)
$$;

CREATE OR REPLACE FUNCTION kiroku.prune(older_than interval, max_rows integer DEFAULT 10000) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH doomed AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state IN ('succeeded', 'failed', 'cancelled')
          AND j.finished_at < now() - prune.older_than
          AND NOT EXISTS (SELECT 1 FROM kiroku.jobs AS d
                          WHERE d.shadow_of = j.id AND d.state IN ('queued', 'scheduled', 'running'))
        ORDER BY j.finished_at
        LIMIT greatest(prune.max_rows, 0)
        FOR UPDATE SKIP LOCKED
    ),
    deleted AS (
        DELETE FROM kiroku.jobs AS j WHERE j.id = ANY (ARRAY(SELECT doomed.id FROM doomed)) RETURNING 1
    )
    SELECT count(*)::integer FROM deleted
$$;
