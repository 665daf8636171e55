-- 0017: what the operator's view reads, and the least a login needs to read it.
--
-- * kiroku_viewer (NOLOGIN group role): the dashboard's login. It reads the views and functions
--   below (owner's rights, so no grant on kiroku.jobs, whose rows hold URIs, image hashes and
--   results), the health facts, the shadow and routing settings and schema_migrations: counts,
--   times, ids and stored error categories; never a job's URI, image or result document. Each
--   reads through an index (the runnable, scheduled, running and finished partial indexes) or
--   counts one pool's due jobs, so a dashboard polling them costs the queue little.
-- * kiroku.pool_measurements: the advisor's per-pool measurement (it was SQL text in
--   KirokuQueue), now one function that the advisor, `kiroku status` and the dashboard share.
-- * kiroku.workers.model_sha256 and model_precision, and kiroku.register_worker(..., model_sha256,
--   model_precision): which weights a live worker serves, and whether its CPU runs them at
--   float32, int8 or mixed (the 6-argument form stays for services that do not know them).
-- * kiroku.shadow_pairs also compares the product's decision (result.food) and names each side's
--   decode mode (result.decode; NULL when the service does not say).
-- * kiroku.runnable_index_facts() and kiroku.stranded_leases(interval): the two doctor checks
--   that counted jobs, callable by a login that may not read them.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kiroku_viewer') THEN
        BEGIN
            CREATE ROLE kiroku_viewer NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- created concurrently by a migration of another database
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kiroku_viewer'
               AND (rolcanlogin OR rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls)) THEN
        RAISE EXCEPTION 'the role kiroku_viewer exists with more than a group role may have (login, superuser, createrole, createdb, replication or bypassrls)'
            USING HINT = 'ALTER ROLE kiroku_viewer NOLOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS, make the logins its members, then migrate again.';
    END IF;
    BEGIN
        GRANT kiroku_viewer TO kiroku_admin;
    EXCEPTION WHEN unique_violation THEN
        NULL; -- granted concurrently by a migration of another database
    END;
END
$$;

SET LOCAL ROLE kiroku_owner;

ALTER TABLE kiroku.workers ADD COLUMN model_sha256 text CHECK (model_sha256 ~ '^[0-9a-f]{64}$'),
                          ADD COLUMN model_precision text CHECK (model_precision IN ('float32', 'int8', 'mixed'));

CREATE FUNCTION kiroku.register_worker(worker_id text, host text, pool text, model text, cores integer, version text,
                                       model_sha256 text, model_precision text)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO kiroku.workers AS w (id, host, pool, model, cores, version, model_sha256, model_precision)
    VALUES (register_worker.worker_id, register_worker.host, register_worker.pool, register_worker.model, register_worker.cores,
            register_worker.version, register_worker.model_sha256, register_worker.model_precision)
    ON CONFLICT (id) DO UPDATE SET last_seen = now(), stopped_at = NULL, model_sha256 = excluded.model_sha256,
                                   model_precision = excluded.model_precision
    WHERE kiroku.may_touch_worker(w.registered_by)
$$;

-- New columns go last: CREATE OR REPLACE VIEW keeps the existing ones in place.
CREATE OR REPLACE VIEW kiroku.shadow_pairs WITH (security_invoker = true) AS
SELECT o.id AS original_id, d.id AS duplicate_id, o.pool AS original_pool, d.pool AS duplicate_pool,
       (o.result -> 'top' -> 0 ->> 'index')::integer AS original_top1,
       (d.result -> 'top' -> 0 ->> 'index')::integer AS duplicate_top1,
       (o.result -> 'top' -> 0 ->> 'score')::float8 AS original_score,
       (d.result -> 'top' -> 0 ->> 'score')::float8 AS duplicate_score,
       extract(epoch FROM o.finished_at - o.started_at)::float8 AS original_seconds,
       extract(epoch FROM d.finished_at - d.started_at)::float8 AS duplicate_seconds,
       greatest(o.finished_at, d.finished_at) AS compared_at,
       CASE WHEN jsonb_typeof(o.result -> 'food') = 'boolean' THEN (o.result ->> 'food')::boolean END AS original_food,
       CASE WHEN jsonb_typeof(d.result -> 'food') = 'boolean' THEN (d.result ->> 'food')::boolean END AS duplicate_food,
       left(o.result ->> 'decode', 16) AS original_decode,
       left(d.result ->> 'decode', 16) AS duplicate_decode
FROM kiroku.jobs AS d JOIN kiroku.jobs AS o ON o.id = d.shadow_of
WHERE d.shadow_of IS NOT NULL AND d.state = 'succeeded' AND o.state = 'succeeded';

CREATE FUNCTION kiroku.pool_measurements(short_window float8, long_window float8, liveness float8)
RETURNS TABLE (pool text, ready bigint, scheduled bigint, running bigint, oldest_age float8, next_due_at timestamptz, due_within_hour bigint,
               short_count bigint, long_count bigint, short_unscheduled bigint, long_unscheduled bigint,
               short_primary bigint, long_primary bigint, p50 float8, p95 float8, live bigint,
               images_per_second float8, speed_age float8, instance_type text,
               busy_seconds float8, busy_jobs bigint, busy_workers bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    -- Windows beyond a day are read as a day: a caller cannot make it scan the whole table.
    WITH windows AS (SELECT least(short_window, 86400) AS short_window, least(long_window, 86400) AS long_window,
                            least(liveness, 86400) AS liveness),
    pools AS (
        SELECT DISTINCT j.pool FROM kiroku.jobs AS j
        WHERE j.state IN ('scheduled', 'queued', 'running') OR j.enqueued_at >= now() - make_interval(secs => (SELECT long_window FROM windows))
        UNION SELECT w.pool FROM kiroku.workers AS w
        WHERE w.stopped_at IS NULL OR w.last_seen >= now() - make_interval(secs => (SELECT long_window FROM windows))
    ),
    depth AS (SELECT * FROM kiroku.queue_depth),
    -- A job arrives when it comes due (due_at; enqueued_at for jobs from before 0011).
    arrivals AS (
        SELECT j.pool,
               count(*) FILTER (WHERE coalesce(j.due_at, j.enqueued_at) >= now() - make_interval(secs => (SELECT short_window FROM windows))) AS short_count,
               count(*) AS long_count,
               count(*) FILTER (WHERE coalesce(j.due_at, j.enqueued_at) >= now() - make_interval(secs => (SELECT short_window FROM windows))
                                  AND coalesce(j.due_at, j.enqueued_at) <= j.enqueued_at) AS short_unscheduled,
               count(*) FILTER (WHERE coalesce(j.due_at, j.enqueued_at) <= j.enqueued_at) AS long_unscheduled,
               count(*) FILTER (WHERE coalesce(j.due_at, j.enqueued_at) >= now() - make_interval(secs => (SELECT short_window FROM windows))
                                  AND j.shadow_of IS NULL) AS short_primary,
               count(*) FILTER (WHERE j.shadow_of IS NULL) AS long_primary
        FROM kiroku.jobs AS j
        WHERE (j.due_at >= now() - make_interval(secs => (SELECT long_window FROM windows))
               OR (j.due_at IS NULL AND j.enqueued_at >= now() - make_interval(secs => (SELECT long_window FROM windows))))
          AND coalesce(j.due_at, j.enqueued_at) <= now()
        GROUP BY j.pool
    ),
    waits AS (
        SELECT j.pool,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - greatest(j.enqueued_at, j.run_after)))::float8 AS p50,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - greatest(j.enqueued_at, j.run_after)))::float8 AS p95
        FROM kiroku.jobs AS j WHERE j.started_at >= now() - make_interval(secs => (SELECT long_window FROM windows)) GROUP BY j.pool
    ),
    -- Workers seen in the last minutes: registered ones, and any worker id (a legacy service's
    -- too, registered or not) with a claim, a finish or a held lease, unless it said it stopped.
    seen AS (
        SELECT w.pool, w.id AS worker FROM kiroku.workers AS w
        WHERE w.stopped_at IS NULL AND w.last_seen >= now() - make_interval(secs => (SELECT liveness FROM windows))
        UNION
        SELECT j.pool, j.worker_id FROM kiroku.jobs AS j
        WHERE j.worker_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM kiroku.workers AS w WHERE w.id = j.worker_id AND w.stopped_at IS NOT NULL)
          AND (j.started_at >= now() - make_interval(secs => (SELECT liveness FROM windows)) OR j.finished_at >= now() - make_interval(secs => (SELECT liveness FROM windows))
               OR (j.state = 'running' AND j.lease_expires_at > now()))
    ),
    live AS (SELECT s.pool, count(*) AS live FROM seen AS s GROUP BY s.pool),
    speeds AS (
        SELECT w.pool,
               avg(w.images_per_second) FILTER (WHERE w.images_per_second IS NOT NULL
                                                  AND w.speed_measured_at >= now() - make_interval(secs => (SELECT long_window FROM windows))) AS images_per_second,
               max(extract(epoch FROM now() - w.speed_measured_at))
                   FILTER (WHERE w.speed_measured_at >= now() - make_interval(secs => (SELECT long_window FROM windows)))::float8 AS speed_age,
               mode() WITHIN GROUP (ORDER BY w.instance_type) AS instance_type
        FROM kiroku.workers AS w
        WHERE w.speed_measured_at >= now() - make_interval(secs => (SELECT long_window FROM windows)) OR w.last_seen >= now() - make_interval(secs => (SELECT long_window FROM windows))
        GROUP BY w.pool
    ),
    -- Busy time from the jobs themselves, for pools whose workers report no speed: each worker's
    -- claim-to-finish intervals merged where they overlap (a batch claimed together counts once),
    -- summed, and divided by the jobs finished in them.
    finished AS (
        SELECT j.pool, j.worker_id, j.started_at, j.finished_at,
               CASE WHEN j.started_at <= max(j.finished_at) OVER (PARTITION BY j.worker_id ORDER BY j.started_at, j.id
                                                                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                    THEN 0 ELSE 1 END AS opens
        FROM kiroku.jobs AS j
        WHERE j.state IN ('succeeded', 'failed') AND j.finished_at >= now() - make_interval(secs => (SELECT long_window FROM windows))
          AND j.started_at IS NOT NULL AND j.worker_id IS NOT NULL
    ),
    islands AS (
        SELECT f.pool, f.worker_id, sum(f.opens) OVER (PARTITION BY f.worker_id ORDER BY f.started_at ROWS UNBOUNDED PRECEDING) AS island,
               f.started_at, f.finished_at
        FROM finished AS f
    ),
    busy AS (
        SELECT i.pool, sum(i.seconds)::float8 AS seconds, sum(i.jobs)::int8 AS jobs, count(DISTINCT i.worker_id) AS workers
        FROM (SELECT s.pool, s.worker_id, extract(epoch FROM max(s.finished_at) - min(s.started_at))::float8 AS seconds, count(*) AS jobs
              FROM islands AS s GROUP BY s.pool, s.worker_id, s.island) AS i
        GROUP BY i.pool
    )
    SELECT p.pool::text,
           coalesce(d.ready, 0), coalesce(d.scheduled, 0), coalesce(d.running, 0),
           coalesce(extract(epoch FROM d.oldest_queued_age), 0)::float8, d.next_due_at, coalesce(d.due_within_hour, 0),
           coalesce(a.short_count, 0), coalesce(a.long_count, 0),
           coalesce(a.short_unscheduled, 0), coalesce(a.long_unscheduled, 0),
           coalesce(a.short_primary, 0), coalesce(a.long_primary, 0),
           wt.p50, wt.p95, coalesce(l.live, 0), s.images_per_second::float8,
           s.speed_age, s.instance_type, b.seconds::float8, coalesce(b.jobs, 0), coalesce(b.workers, 0)
    FROM pools AS p
    LEFT JOIN depth AS d ON d.pool = p.pool LEFT JOIN arrivals AS a ON a.pool = p.pool LEFT JOIN waits AS wt ON wt.pool = p.pool
    LEFT JOIN live AS l ON l.pool = p.pool LEFT JOIN speeds AS s ON s.pool = p.pool LEFT JOIN busy AS b ON b.pool = p.pool
    ORDER BY p.pool
$$;

-- Per pool: jobs due and waiting, scheduled and running (each count from its own partial index),
-- and how long the oldest due job (the lowest id among them) has waited.
CREATE VIEW kiroku.dashboard_depth WITH (security_barrier) AS
SELECT t.pool::text AS pool, sum(t.ready)::bigint AS ready, sum(t.scheduled)::bigint AS scheduled, sum(t.running)::bigint AS running,
       coalesce(extract(epoch FROM now() - (SELECT greatest(o.enqueued_at, o.run_after) FROM kiroku.jobs AS o
                                            WHERE o.id = min(t.oldest_id))), 0)::float8 AS oldest_wait
FROM (SELECT j.pool, count(*) AS ready, 0 AS scheduled, 0 AS running, min(j.id) AS oldest_id
      FROM kiroku.jobs AS j WHERE j.state = 'queued' GROUP BY j.pool
      UNION ALL SELECT j.pool, 0, count(*), 0, NULL FROM kiroku.jobs AS j WHERE j.state = 'scheduled' GROUP BY j.pool
      UNION ALL SELECT j.pool, 0, 0, count(*), NULL FROM kiroku.jobs AS j WHERE j.state = 'running' GROUP BY j.pool) AS t
GROUP BY t.pool;

-- The last 20 jobs finished, newest first, from the index of finished jobs: id, pool, state, wait,
-- service time and stored error category (never the URI or the result).
CREATE VIEW kiroku.dashboard_latest WITH (security_barrier) AS
SELECT j.id, j.pool::text AS pool, j.state, j.finished_at,
       extract(epoch FROM j.started_at - greatest(j.enqueued_at, j.run_after))::float8 AS wait_seconds,
       extract(epoch FROM j.finished_at - j.started_at)::float8 AS service_seconds,
       left(j.error, 120) AS category
FROM kiroku.jobs AS j
WHERE j.state IN ('succeeded', 'failed', 'cancelled')
ORDER BY j.finished_at DESC
LIMIT 20;

-- Per pool and minute in [from_minute, to_minute), at most the last two hours: jobs succeeded and
-- failed, and queue-wait percentiles. A range scan of the index of finished jobs; the dashboard
-- reads each closed minute once.
CREATE FUNCTION kiroku.finished_minutes(from_minute timestamptz, to_minute timestamptz)
RETURNS TABLE (pool text, minute timestamptz, succeeded bigint, failed bigint, wait_p50 float8, wait_p95 float8)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT j.pool::text, date_bin('1 minute', j.finished_at, 'epoch'),
           count(*) FILTER (WHERE j.state = 'succeeded'), count(*) FILTER (WHERE j.state = 'failed'),
           (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - greatest(j.enqueued_at, j.run_after))))::float8,
           (percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM j.started_at - greatest(j.enqueued_at, j.run_after))))::float8
    FROM kiroku.jobs AS j
    WHERE j.state IN ('succeeded', 'failed', 'cancelled')
      AND j.finished_at >= greatest(from_minute, now() - interval '2 hours') AND j.finished_at < to_minute
    GROUP BY 1, 2
$$;

-- Failures in [from_minute, to_minute), at most the last two hours, per pool, minute and stored
-- category (a category, never content), with the latest five job ids.
CREATE FUNCTION kiroku.failure_minutes(from_minute timestamptz, to_minute timestamptz)
RETURNS TABLE (pool text, minute timestamptz, category text, kind text, jobs bigint, latest_ids bigint[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT j.pool::text, date_bin('1 minute', j.finished_at, 'epoch'), left(coalesce(j.error, 'unknown'), 120), j.error_kind,
           count(*), (array_agg(j.id ORDER BY j.finished_at DESC, j.id DESC))[1:5]
    FROM kiroku.jobs AS j
    WHERE j.state = 'failed' AND j.finished_at >= greatest(from_minute, now() - interval '2 hours') AND j.finished_at < to_minute
    GROUP BY 1, 2, 3, 4
$$;

-- Live workers: what each serves, on what, and how fast.
-- A worker's own text (id, host, model, version) is cut to 200 characters, and at most 500
-- workers are listed, the most recently seen first.
CREATE VIEW kiroku.dashboard_workers WITH (security_barrier) AS
SELECT left(w.id, 200) AS id, left(w.host, 200) AS host, left(w.pool, 63) AS pool, left(w.model, 200) AS model, w.model_sha256, w.model_precision,
       w.cores, left(w.version, 200) AS version, left(w.instance_type, 64) AS instance_type,
       CASE WHEN w.speed_measured_at >= now() - interval '1 hour' THEN w.images_per_second END AS images_per_second,
       w.started_at, w.last_seen
FROM kiroku.workers AS w
WHERE w.stopped_at IS NULL AND w.last_seen > now() - interval '2 minutes'
ORDER BY w.last_seen DESC
LIMIT 500;

-- The shadow comparison in counts (what ShadowComparison reads), and per pool its seconds from
-- claim to result and the decode modes its results name. Functions, not views: kiroku.shadow_pairs
-- reads with the caller's rights (a producer sees its own pairs), and these read every pair.
CREATE FUNCTION kiroku.shadow_summary()
RETURNS TABLE (compared bigint, agreeing bigint, decisions bigint, decisions_agreeing bigint, score_difference float8)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT count(*),
           count(*) FILTER (WHERE s.original_top1 = s.duplicate_top1),
           count(*) FILTER (WHERE s.original_food IS NOT NULL AND s.duplicate_food IS NOT NULL),
           count(*) FILTER (WHERE s.original_food = s.duplicate_food),
           avg(abs(s.original_score - s.duplicate_score))
    FROM kiroku.shadow_pairs AS s
$$;

CREATE FUNCTION kiroku.shadow_pools()
RETURNS TABLE (pool text, results bigint, mean_seconds float8, decode_modes text[])
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT t.pool::text, count(*), avg(t.seconds),
           array_agg(DISTINCT coalesce(t.decode, 'unknown') ORDER BY coalesce(t.decode, 'unknown'))
    FROM (SELECT s.original_pool AS pool, s.original_seconds AS seconds, s.original_decode AS decode FROM kiroku.shadow_pairs AS s
          UNION ALL SELECT s.duplicate_pool, s.duplicate_seconds, s.duplicate_decode FROM kiroku.shadow_pairs AS s) AS t
    GROUP BY 1
    ORDER BY 1
$$;

-- The autoscaler's latest recommendation per pool.
CREATE VIEW kiroku.dashboard_recommendations WITH (security_barrier) AS
SELECT DISTINCT ON (r.pool) r.pool, r.made_at, r.instance_type, r.desired, r.recommended, r.stabilised,
       (r.inputs -> 'observation' ->> 'current_instances')::float8 AS live
FROM kiroku.recommendations AS r
WHERE r.made_at >= now() - interval '1 hour'
ORDER BY r.pool, r.made_at DESC;

CREATE FUNCTION kiroku.runnable_index_facts(OUT bytes bigint, OUT entries bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT pg_relation_size('kiroku.jobs_runnable'), (SELECT count(*) FROM kiroku.jobs WHERE state = 'queued')
$$;

CREATE FUNCTION kiroku.stranded_leases(overrun interval, OUT stranded bigint, OUT worst float8, OUT live bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT count(*), coalesce(max(extract(epoch FROM now() - j.lease_expires_at)), 0)::float8,
           (SELECT count(*) FROM kiroku.workers AS w WHERE w.stopped_at IS NULL AND w.last_seen > now() - interval '2 minutes')
    FROM kiroku.jobs AS j WHERE j.state = 'running' AND j.lease_expires_at < now() - stranded_leases.overrun
$$;

REVOKE ALL ON kiroku.dashboard_depth, kiroku.dashboard_latest, kiroku.dashboard_workers, kiroku.dashboard_recommendations FROM PUBLIC;
REVOKE ALL ON FUNCTION kiroku.register_worker(text, text, text, text, integer, text, text, text), kiroku.pool_measurements(float8, float8, float8),
                       kiroku.runnable_index_facts(), kiroku.stranded_leases(interval), kiroku.shadow_summary(), kiroku.shadow_pools(),
                       kiroku.finished_minutes(timestamptz, timestamptz), kiroku.failure_minutes(timestamptz, timestamptz) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION kiroku.register_worker(text, text, text, text, integer, text, text, text) TO kiroku_worker, kiroku_admin;
GRANT USAGE ON SCHEMA kiroku TO kiroku_viewer;
GRANT SELECT ON kiroku.dashboard_depth, kiroku.dashboard_latest, kiroku.dashboard_workers, kiroku.dashboard_recommendations, kiroku.queue_depth, kiroku.recent_throughput,
                kiroku.shadow, kiroku.routes, kiroku.schema_migrations TO kiroku_viewer;
GRANT EXECUTE ON FUNCTION kiroku.pool_measurements(float8, float8, float8), kiroku.shadow_summary(), kiroku.shadow_pools(),
                          kiroku.finished_minutes(timestamptz, timestamptz), kiroku.failure_minutes(timestamptz, timestamptz)
    TO kiroku_viewer, kiroku_admin;
GRANT EXECUTE ON FUNCTION kiroku.runnable_index_facts(), kiroku.stranded_leases(interval) TO kiroku_viewer, kiroku_worker, kiroku_admin;
