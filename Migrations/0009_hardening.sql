-- 0009: safe to open to untrusted producers (SECURITY.md has the threat model).
--
-- * A NOLOGIN owner role, kiroku_owner (neither superuser nor CREATEROLE), owns the schema, its
--   tables, views and functions, whoever runs the migration: the SECURITY DEFINER functions run
--   as a role that can do nothing outside this schema. kiroku_admin keeps only SELECT, INSERT,
--   UPDATE and DELETE on the data (no TRIGGER, TRUNCATE or REFERENCES: a trigger it could create
--   would fire inside those functions as their owner) and may only read schema_migrations.
--   Later migrations start with `SET LOCAL ROLE kiroku_owner;` so what they create is the owner's.
-- * Lease tokens: a claim hands each job a random token (244 random bits) that only its holder
--   knows; the table keeps its SHA-256. Heartbeat, complete, fail and release take the token, so a
--   worker login that reads kiroku.jobs cannot act on another worker's lease. Attempts only grow:
--   a release no longer takes the attempt back but credits it (attempt_base), and so does requeue.
-- * Limits: inline images up to kiroku.settings.max_inline_bytes (50 MB unless an admin sets
--   another), enforced on every path into kiroku.job_images; a claim bounded by bytes as well
--   as by count; pool names, max_attempts and leases within sane ranges; NULL arguments refused.
-- * Idempotency keys: each enqueuer's own; a key reused with another image, model or pool is an
--   error naming the key and the job that holds it, instead of silently returning that job.
-- * Row-level security: each job records who enqueued it (session_user); a producer reads and
--   cancels its own jobs only. Workers and admins see all.
-- * prune never deletes an unfinished job: a running shadow duplicate outlives its original.

-- The owner role and the hand-over --------------------------------------------------------------

DO $$
DECLARE
    owner_role pg_roles%ROWTYPE;
    obj record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kiroku_owner') THEN
        BEGIN
            CREATE ROLE kiroku_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- created concurrently by a migration of another database
        END;
    END IF;
    SELECT * INTO owner_role FROM pg_roles WHERE rolname = 'kiroku_owner';
    IF owner_role.rolsuper OR owner_role.rolcreaterole OR owner_role.rolcanlogin OR owner_role.rolbypassrls
       OR owner_role.rolcreatedb OR owner_role.rolreplication
       OR EXISTS (SELECT 1 FROM pg_auth_members WHERE member = owner_role.oid) THEN
        RAISE EXCEPTION 'the role kiroku_owner exists with more than it may have (login, superuser, createrole, createdb, replication, bypassrls or membership in another role)'
            USING HINT = 'ALTER ROLE kiroku_owner NOLOGIN NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS and revoke its memberships, then migrate again.';
    END IF;
    -- Handing an object over needs membership in the new owner (superusers have it implicitly).
    IF NOT pg_has_role(current_user, 'kiroku_owner', 'MEMBER') THEN
        EXECUTE format('GRANT kiroku_owner TO %I', current_user);
    END IF;

    -- A schema's new owner needs CREATE on the database, for the hand-over only.
    EXECUTE format('GRANT CREATE ON DATABASE %I TO kiroku_owner', current_database());
    ALTER SCHEMA kiroku OWNER TO kiroku_owner;
    FOR obj IN SELECT c.relname, c.relkind FROM pg_class AS c
               WHERE c.relnamespace = 'kiroku'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
                 AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend AS d
                                                      WHERE d.objid = c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s kiroku.%I OWNER TO kiroku_owner',
                       CASE obj.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                        WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, obj.relname);
    END LOOP;
    FOR obj IN SELECT p.oid::regprocedure AS signature, p.prokind FROM pg_proc AS p
               WHERE p.pronamespace = 'kiroku'::regnamespace
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO kiroku_owner',
                       CASE obj.prokind WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END, obj.signature);
    END LOOP;
    EXECUTE format('REVOKE CREATE ON DATABASE %I FROM kiroku_owner', current_database());
END
$$;

-- From here on, what this migration creates is the owner's.
SET LOCAL ROLE kiroku_owner;

-- Functions the owner creates are not executable by PUBLIC unless granted.
ALTER DEFAULT PRIVILEGES FOR ROLE kiroku_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;

-- The trigger functions get a fixed search_path like the rest.
ALTER FUNCTION kiroku.notify_jobs_inserted() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION kiroku.notify_job_finished() SET search_path = pg_catalog, pg_temp;

-- Settings and limits ----------------------------------------------------------------------------

CREATE TABLE kiroku.settings (
    singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    -- 256 MB at most: a claim in text format doubles bytea, and one value may not pass 1 GB.
    max_inline_bytes bigint  NOT NULL DEFAULT 52428800 CHECK (max_inline_bytes BETWEEN 1 AND 268435456)
);
INSERT INTO kiroku.settings DEFAULT VALUES;
COMMENT ON TABLE kiroku.settings IS 'Queue-wide limits (one row), set through admin functions.';

-- Sets the largest inline image accepted from now on (bytes; 1 to 256 MB).
CREATE FUNCTION kiroku.set_max_inline_bytes(max_bytes bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF set_max_inline_bytes.max_bytes IS NULL OR set_max_inline_bytes.max_bytes NOT BETWEEN 1 AND 268435456 THEN
        RAISE EXCEPTION 'kiroku.set_max_inline_bytes: % is not between 1 and 268435456 bytes', set_max_inline_bytes.max_bytes
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE kiroku.settings SET max_inline_bytes = set_max_inline_bytes.max_bytes;
END
$$;

-- Every row into kiroku.job_images (enqueue functions or an admin's INSERT) keeps to the cap.
CREATE FUNCTION kiroku.check_inline_size() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    -- Without the settings row (only the owner can delete it), the default: fail closed.
    cap bigint := coalesce((SELECT s.max_inline_bytes FROM kiroku.settings AS s), 52428800);
BEGIN
    IF octet_length(NEW.image) > cap THEN
        RAISE EXCEPTION 'kiroku: an inline image of % bytes is over the maximum of % bytes', octet_length(NEW.image), cap
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'Enqueue it by URI, or have an admin raise the cap with kiroku.set_max_inline_bytes.';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER job_images_size BEFORE INSERT OR UPDATE OF image ON kiroku.job_images
    FOR EACH ROW EXECUTE FUNCTION kiroku.check_inline_size();

-- Raises unless lease is between 1 second and 1 hour.
CREATE FUNCTION kiroku.check_lease(caller text, lease interval) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF check_lease.lease IS NULL OR check_lease.lease < interval '1 second' OR check_lease.lease > interval '1 hour' THEN
        RAISE EXCEPTION '%: a lease must be between 1 second and 1 hour, not %', caller, coalesce(check_lease.lease::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

-- Raises unless job_ids and lease_tokens pair up: same length, no NULL, no job twice.
CREATE FUNCTION kiroku.check_leases(caller text, job_ids bigint[], lease_tokens text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF check_leases.job_ids IS NULL OR check_leases.lease_tokens IS NULL
       OR cardinality(check_leases.job_ids) <> cardinality(check_leases.lease_tokens) THEN
        RAISE EXCEPTION '%: job_ids and lease_tokens must be arrays of the same length', caller
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF array_position(check_leases.job_ids, NULL) IS NOT NULL OR array_position(check_leases.lease_tokens, NULL) IS NOT NULL THEN
        RAISE EXCEPTION '%: a job id or lease token is NULL', caller USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF (SELECT count(DISTINCT i) FROM unnest(check_leases.job_ids) AS i) <> cardinality(check_leases.job_ids) THEN
        RAISE EXCEPTION '%: job % appears more than once', caller,
            (SELECT i FROM unnest(check_leases.job_ids) AS i GROUP BY i HAVING count(*) > 1 LIMIT 1)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

-- Lease tokens are 32 bytes from two random UUIDs (244 random bits) as hex, made in kiroku.claim;
-- the table keeps sha256(convert_to(token, 'UTF8')). Both are written out where they are used:
-- a helper function costs a call per row (about 10 µs with its SET search_path), a third of
-- the tokens' cost at batches of 32.

-- A uniform draw in [0, 1) from the strong random source (48 random bits of a UUID): unlike
-- random(), a caller's setseed() cannot steer it (routing, shadow sampling, retry jitter).
CREATE FUNCTION kiroku.uniform() RETURNS double precision
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN ('x' || encode(substr(uuid_send(gen_random_uuid()), 1, 6), 'hex'))::bit(48)::bigint / 281474976710656.0::float8;
END
$$;

CREATE OR REPLACE FUNCTION kiroku.route_pool() RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT kiroku.pick_route(kiroku.uniform())
$$;

CREATE OR REPLACE FUNCTION kiroku.retry_delay(attempt integer) RETURNS interval
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT make_interval(secs => least(600.0::float8, power(2.0::float8, greatest(retry_delay.attempt, 0)))
                                 * (1.0 + kiroku.uniform() * 0.25))
$$;

-- The jobs table -------------------------------------------------------------------------------

ALTER TABLE kiroku.jobs
    ADD COLUMN enqueued_by      text    NOT NULL DEFAULT session_user,
    ADD COLUMN lease_token_hash bytea,
    -- Attempts before this one were credited back (release, requeue): attempt - attempt_base of
    -- max_attempts are used.
    ADD COLUMN attempt_base     integer NOT NULL DEFAULT 0,
    -- Bytes of the inline image (NULL for URI jobs): what a claim's byte budget adds up.
    ADD COLUMN image_size       integer;

UPDATE kiroku.jobs AS j SET image_size = octet_length(i.image) FROM kiroku.job_images AS i WHERE i.job_id = j.id;

ALTER TABLE kiroku.jobs
    DROP CONSTRAINT jobs_error_kind_valid,
    ADD CONSTRAINT jobs_error_kind_valid CHECK (error_kind IN ('permanent', 'exhausted', 'refused')),
    ADD CONSTRAINT jobs_pool_name CHECK (pool ~ '^[a-z0-9_-]{1,63}$'),
    ADD CONSTRAINT jobs_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 100),
    ADD CONSTRAINT jobs_attempt_base_valid CHECK (attempt_base BETWEEN 0 AND attempt),
    ADD CONSTRAINT jobs_model_length CHECK (length(model) BETWEEN 1 AND 200),
    ADD CONSTRAINT jobs_image_uri_length CHECK (length(image_uri) <= 4096),
    ADD CONSTRAINT jobs_idempotency_key_length CHECK (length(idempotency_key) BETWEEN 1 AND 255);
ALTER TABLE kiroku.routes ADD CONSTRAINT routes_pool_name CHECK (pool ~ '^[a-z0-9_-]{1,63}$');
ALTER TABLE kiroku.shadow
    ADD CONSTRAINT shadow_pool_names CHECK (pool_a ~ '^[a-z0-9_-]{1,63}$' AND pool_b ~ '^[a-z0-9_-]{1,63}$');

-- Idempotency keys are each enqueuer's own: another producer's key neither returns its job
-- nor clashes with it.
DROP INDEX kiroku.jobs_idempotency_key;
CREATE UNIQUE INDEX jobs_idempotency_key ON kiroku.jobs (enqueued_by, idempotency_key)
    WHERE idempotency_key IS NOT NULL AND state IN ('queued', 'running');

-- A shadow duplicate outlives its original (prune, an admin's DELETE): the link is cleared.
ALTER TABLE kiroku.jobs DROP CONSTRAINT jobs_shadow_of_fkey,
    ADD CONSTRAINT jobs_shadow_of_fkey FOREIGN KEY (shadow_of) REFERENCES kiroku.jobs (id) ON DELETE SET NULL;

-- Row-level security: producers see and insert their own jobs; workers and admins all. The
-- owner's SECURITY DEFINER functions are not subject to it (they check what they must).
ALTER TABLE kiroku.jobs ENABLE ROW LEVEL SECURITY;
CREATE POLICY jobs_workers_and_admins ON kiroku.jobs TO kiroku_worker, kiroku_admin USING (true) WITH CHECK (true);
CREATE POLICY jobs_producers_read_own ON kiroku.jobs FOR SELECT TO kiroku_producer USING (enqueued_by = session_user);
CREATE POLICY jobs_producers_insert_own ON kiroku.jobs FOR INSERT TO kiroku_producer WITH CHECK (enqueued_by = session_user);

-- Shadow pairs as the reader may see them: a producer its own.
ALTER VIEW kiroku.shadow_pairs SET (security_invoker = true);

-- Enqueue --------------------------------------------------------------------------------------

DROP FUNCTION kiroku.enqueue_many_unrouted(bytea[], text[], text[], integer[], text[], text[], timestamptz[]);

-- Inserts jobs in one set-based INSERT (one trigger firing, one NOTIFY per pool): the one
-- implementation behind every enqueue function. Element i of each array describes job i; pools
-- are the routed pools, requested_pools what the caller asked for (NULL: routed). Returns each
-- job's id by ordinal, and whether this call created it: a job whose idempotency key an
-- unfinished job already holds (or an earlier element of the same call) gets that job's id and
-- created = false, provided it asks for the same image, model and pool; otherwise an error.
CREATE FUNCTION kiroku.insert_jobs(
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
            ON CONFLICT (enqueued_by, idempotency_key) WHERE idempotency_key IS NOT NULL AND state IN ('queued', 'running')
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
                     AND j.state IN ('queued', 'running')))
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

-- kiroku.enqueue_many of 0008 (routing, then the shadow sample) on top of kiroku.insert_jobs.
CREATE OR REPLACE FUNCTION kiroku.enqueue_many(
    images bytea[], uris text[], models text[], priorities integer[], pools text[],
    idempotency_keys text[], run_afters timestamptz[])
RETURNS TABLE (ordinal integer, job_id bigint, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    routed text[] := enqueue_many.pools;
    ids bigint[];
    fresh boolean[];
    config kiroku.shadow%ROWTYPE;
    sample integer[];
    duplicate_ids bigint[];
BEGIN
    IF EXISTS (SELECT 1 FROM kiroku.routes WHERE weight > 0) THEN
        routed := ARRAY(SELECT coalesce(t.pool, kiroku.pick_route(t.x))
                        FROM (SELECT u.pool, u.n, kiroku.uniform() AS x FROM unnest(enqueue_many.pools) WITH ORDINALITY AS u(pool, n)) AS t
                        ORDER BY t.n);
    END IF;
    SELECT array_agg(e.job_id ORDER BY e.ordinal), array_agg(e.created ORDER BY e.ordinal) INTO ids, fresh
    FROM kiroku.insert_jobs(enqueue_many.images, enqueue_many.uris, enqueue_many.models, enqueue_many.priorities,
                            routed, enqueue_many.pools, enqueue_many.idempotency_keys, enqueue_many.run_afters) AS e;

    SELECT * INTO config FROM kiroku.shadow AS s WHERE s.fraction > 0;
    IF FOUND THEN
        sample := ARRAY(SELECT t.n::integer FROM unnest(fresh) WITH ORDINALITY AS t(is_new, n)
                        WHERE t.is_new AND coalesce(routed[t.n], 'cpu') IN (config.pool_a, config.pool_b)
                          AND kiroku.uniform() < config.fraction
                        ORDER BY t.n);
        IF cardinality(sample) > 0 THEN
            -- Two statements: rows the inner enqueue inserts are not visible to a scan begun
            -- in the same statement.
            SELECT array_agg(d.job_id ORDER BY d.ordinal) INTO duplicate_ids
            FROM kiroku.insert_jobs(
                    ARRAY(SELECT enqueue_many.images[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.uris[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.models[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.priorities[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT CASE WHEN coalesce(routed[m], 'cpu') = config.pool_a THEN config.pool_b ELSE config.pool_a END
                          FROM unnest(sample) AS m),
                    ARRAY(SELECT NULL::text FROM unnest(sample) AS m),
                    ARRAY(SELECT NULL::text FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.run_afters[m] FROM unnest(sample) AS m)) AS d;
            UPDATE kiroku.jobs AS j
            SET shadow_of = ids[s.n]
            FROM unnest(sample, duplicate_ids) AS s(n, duplicate_id)
            WHERE j.id = ANY (duplicate_ids) AND j.id = s.duplicate_id;
        END IF;
    END IF;
    RETURN QUERY SELECT t.n::integer, t.id, t.is_new FROM unnest(ids, fresh) WITH ORDINALITY AS t(id, is_new, n) ORDER BY t.n;
END
$$;

-- The worker's side: claim, heartbeat, finish ---------------------------------------------------

DROP FUNCTION kiroku.claim(text, text, integer, interval);
DROP FUNCTION kiroku.heartbeat(text, bigint[], interval);
DROP FUNCTION kiroku.complete(bigint, text, integer, jsonb);
DROP FUNCTION kiroku.complete_many(text, bigint[], integer[], jsonb[]);
DROP FUNCTION kiroku.fail(bigint, text, integer, text, boolean);
DROP FUNCTION kiroku.release(text, bigint[], integer[]);

-- Claims up to max_jobs runnable jobs of a pool (highest priority first, then oldest) whose
-- inline images add up to at most max_bytes; the first job is claimed whatever its size (the
-- inline cap bounds it), so no row can fail every claim. Each job comes with its lease token.
-- The candidates CTE pins the LIMIT and the row locks; the UPDATE is driven by
-- `id = ANY (ARRAY(...))` and the image by a correlated subquery (primary-key lookups where a
-- join would hash the whole table in a generic plan). PL/pgSQL for its plan cache, and the
-- generic plan forced: left to choose, the plan cache kept planning this query afresh on every
-- call (0.3 ms, a third of a claim of one job).
CREATE FUNCTION kiroku.claim(worker_id text, pool text, max_jobs integer, lease interval, max_bytes bigint DEFAULT 67108864)
RETURNS TABLE (job_id bigint, attempt integer, lease_token text, model text, image bytea, image_uri text, enqueued_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    PERFORM kiroku.check_lease('kiroku.claim', claim.lease);
    IF claim.worker_id IS NULL OR claim.pool IS NULL OR claim.max_jobs IS NULL OR claim.max_bytes IS NULL THEN
        RAISE EXCEPTION 'kiroku.claim: worker_id, pool, max_jobs and max_bytes must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    RETURN QUERY
    WITH candidates AS MATERIALIZED (
        SELECT j.id, j.priority, coalesce(j.image_size, 0) AS size
        FROM kiroku.jobs AS j
        WHERE j.state = 'queued'
          AND j.pool = claim.pool
          AND j.run_after <= now()
        ORDER BY j.priority DESC, j.id
        LIMIT greatest(least(claim.max_jobs, 1000), 0)
        FOR UPDATE SKIP LOCKED
    ),
    picked AS MATERIALIZED (
        SELECT c.id, encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'hex') AS token
        FROM (SELECT c.id, row_number() OVER w AS n, sum(c.size) OVER w AS upto
              FROM candidates AS c WINDOW w AS (ORDER BY c.priority DESC, c.id)) AS c
        WHERE c.n = 1 OR c.upto <= claim.max_bytes
    ),
    claimed AS (
        UPDATE kiroku.jobs AS j
        SET state = 'running',
            attempt = j.attempt + 1,
            worker_id = claim.worker_id,
            lease_token_hash = sha256(convert_to(picked.token, 'UTF8')),
            lease_expires_at = now() + claim.lease,
            started_at = now()
        FROM picked
        WHERE j.id = ANY (ARRAY(SELECT picked.id FROM picked))
          AND j.id = picked.id
        RETURNING j.id, j.attempt, picked.token, j.model, j.image_inline, j.image_uri, j.enqueued_at, j.priority
    )
    SELECT c.id, c.attempt, c.token, c.model,
           CASE WHEN c.image_inline THEN (SELECT i.image FROM kiroku.job_images AS i WHERE i.job_id = c.id) END,
           c.image_uri, c.enqueued_at
    FROM claimed AS c
    ORDER BY c.priority DESC, c.id;
END
$$;

-- Extends the leases whose tokens the caller holds; also renews the worker's last_seen.
CREATE FUNCTION kiroku.heartbeat(worker_id text, job_ids bigint[], lease_tokens text[], lease interval)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    extended integer;
BEGIN
    PERFORM kiroku.check_lease('kiroku.heartbeat', heartbeat.lease);
    PERFORM kiroku.check_leases('kiroku.heartbeat', heartbeat.job_ids, heartbeat.lease_tokens);
    UPDATE kiroku.workers AS w SET last_seen = now()
    WHERE w.id = heartbeat.worker_id AND kiroku.may_touch_worker(w.registered_by);
    -- Rows another transaction holds (a producer's open cancel, a completion) are skipped, not
    -- waited for: one held row must not stall the renewal of every other lease.
    WITH held AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        JOIN unnest(heartbeat.job_ids, heartbeat.lease_tokens) AS t(job_id, token) ON j.id = t.job_id
        WHERE j.id = ANY (heartbeat.job_ids)
          AND j.state = 'running'
          AND j.lease_token_hash = sha256(convert_to(t.token, 'UTF8'))
        FOR UPDATE OF j SKIP LOCKED
    ),
    renewed AS (
        UPDATE kiroku.jobs AS j
        SET lease_expires_at = now() + heartbeat.lease
        WHERE j.id = ANY (ARRAY(SELECT held.id FROM held))
        RETURNING 1
    )
    SELECT count(*)::integer INTO extended FROM renewed;
    RETURN extended;
END
$$;

-- Stores the results of a batch in one set-based UPDATE: the one implementation behind complete.
-- For each job, stored = false, changing nothing, when the token no longer holds its lease.
-- A lease that expired but was not yet rescued still counts as held: nobody else has the job.
CREATE FUNCTION kiroku.complete_many(job_ids bigint[], lease_tokens text[], results jsonb[])
RETURNS TABLE (job_id bigint, stored boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    PERFORM kiroku.check_leases('kiroku.complete', complete_many.job_ids, complete_many.lease_tokens);
    IF complete_many.results IS NULL OR cardinality(complete_many.results) <> cardinality(complete_many.job_ids) THEN
        RAISE EXCEPTION 'kiroku.complete: results must be an array as long as job_ids' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(complete_many.results) AS r WHERE r IS NULL OR jsonb_typeof(r) <> 'object') THEN
        RAISE EXCEPTION 'kiroku.complete: every result must be a JSON object, not NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
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
        RETURNING j.id
    )
    SELECT input.job_id, EXISTS (SELECT 1 FROM done WHERE done.id = input.job_id)
    FROM input
    ORDER BY input.n;
END
$$;

-- Stores one job's result; false, changing nothing, when the token no longer holds its lease.
CREATE FUNCTION kiroku.complete(job_id bigint, lease_token text, result jsonb)
RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT c.stored
    FROM kiroku.complete_many(ARRAY[complete.job_id], ARRAY[complete.lease_token], ARRAY[complete.result]) AS c
$$;

-- Records a failed attempt and returns the job's new state: 'queued' (retry after a backoff) or
-- 'failed'. Retryable errors are retried until max_attempts are used, then fail as 'exhausted';
-- others fail at once as 'permanent', or as 'refused' when the worker's fetch policy refused the
-- image. NULL, changing nothing, when the token no longer holds the lease. The error is what
-- producers read: a category, never the image's content (at most 1,000 characters are kept).
CREATE FUNCTION kiroku.fail(job_id bigint, lease_token text, error text, retryable boolean, refused boolean DEFAULT false)
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
    RETURN new_state;
END
$$;

-- Hands back claimed jobs the worker will not start (graceful shutdown): queued again at once,
-- the claim's attempt credited (it does not count against max_attempts), the pool notified.
-- Returns how many of the given leases were still held and handed back.
CREATE FUNCTION kiroku.release(job_ids bigint[], lease_tokens text[])
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
    released integer;
    released_pools text[];
BEGIN
    PERFORM kiroku.check_leases('kiroku.release', release.job_ids, release.lease_tokens);
    WITH input AS MATERIALIZED (
        SELECT t.job_id, sha256(convert_to(t.token, 'UTF8')) AS token_hash
        FROM unnest(release.job_ids, release.lease_tokens) AS t(job_id, token)
    ),
    handed_back AS (
        UPDATE kiroku.jobs AS j
        SET state = 'queued',
            attempt_base = j.attempt_base + 1,
            worker_id = NULL,
            lease_expires_at = NULL,
            lease_token_hash = NULL,
            started_at = NULL,
            run_after = now()
        FROM input
        WHERE j.id = ANY (release.job_ids)
          AND j.id = input.job_id
          AND j.state = 'running'
          AND j.lease_token_hash = input.token_hash
        RETURNING j.pool
    )
    SELECT count(*)::integer, array_agg(DISTINCT h.pool) INTO released, released_pools FROM handed_back AS h;
    PERFORM pg_notify('kiroku_jobs', p.pool) FROM unnest(released_pools) AS p(pool);
    RETURN released;
END
$$;

-- Running jobs whose lease expired go back to queued, or fail as 'exhausted' when out of attempts.
CREATE OR REPLACE FUNCTION kiroku.rescue_expired() RETURNS integer
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
        SET state       = CASE WHEN j.attempt - j.attempt_base < j.max_attempts THEN 'queued' ELSE 'failed' END,
            error_kind  = CASE WHEN j.attempt - j.attempt_base >= j.max_attempts THEN 'exhausted' END,
            finished_at = CASE WHEN j.attempt - j.attempt_base < j.max_attempts THEN NULL ELSE now() END,
            run_after   = now(),
            error = format('lease expired: worker %s stopped renewing attempt %s', j.worker_id, j.attempt),
            lease_expires_at = NULL,
            lease_token_hash = NULL
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

-- Workers' rows ---------------------------------------------------------------------------------

-- A worker login may touch only the kiroku.workers rows it registered (an admin any): one
-- compromised worker cannot mark others stopped, keep them alive, or feed the advisor their speed.
ALTER TABLE kiroku.workers
    ADD COLUMN registered_by text NOT NULL DEFAULT session_user,
    ADD CONSTRAINT workers_speed_range CHECK (images_per_second <= 100000);

-- Whether the session may change worker row `owner`: its own, or an admin's session.
CREATE FUNCTION kiroku.may_touch_worker(owner text) RETURNS boolean
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT may_touch_worker.owner = session_user OR pg_has_role(session_user, 'kiroku_admin', 'MEMBER')
$$;

CREATE OR REPLACE FUNCTION kiroku.register_worker(worker_id text, host text, pool text, model text, cores integer, version text)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO kiroku.workers AS w (id, host, pool, model, cores, version)
    VALUES (register_worker.worker_id, register_worker.host, register_worker.pool,
            register_worker.model, register_worker.cores, register_worker.version)
    ON CONFLICT (id) DO UPDATE SET last_seen = now(), stopped_at = NULL WHERE kiroku.may_touch_worker(w.registered_by)
$$;

CREATE OR REPLACE FUNCTION kiroku.deregister_worker(worker_id text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE kiroku.workers AS w SET stopped_at = now(), last_seen = now()
    WHERE w.id = deregister_worker.worker_id AND kiroku.may_touch_worker(w.registered_by)
$$;

CREATE OR REPLACE FUNCTION kiroku.report_worker_speed(worker_id text, instance_type text, images_per_second double precision)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE kiroku.workers AS w
    SET instance_type = coalesce(report_worker_speed.instance_type, w.instance_type),
        images_per_second = coalesce(report_worker_speed.images_per_second, w.images_per_second),
        speed_measured_at = CASE WHEN report_worker_speed.images_per_second IS NULL THEN w.speed_measured_at ELSE now() END,
        last_seen = now()
    WHERE w.id = report_worker_speed.worker_id AND kiroku.may_touch_worker(w.registered_by)
$$;

-- Administration -------------------------------------------------------------------------------

-- Cancels a queued or running job (a worker still running it is fenced out): a producer its own
-- jobs only, an admin any. False otherwise.
CREATE OR REPLACE FUNCTION kiroku.cancel(job_id bigint) RETURNS boolean
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH cancelled AS (
        UPDATE kiroku.jobs AS j
        SET state = 'cancelled', finished_at = now(), lease_expires_at = NULL, lease_token_hash = NULL
        WHERE j.id = cancel.job_id AND j.state IN ('queued', 'running')
          AND (j.enqueued_by = session_user OR pg_has_role(session_user, 'kiroku_admin', 'MEMBER'))
        RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM cancelled)
$$;

-- Puts a failed or cancelled job back in the queue with its attempts credited. False when the job
-- is not failed or cancelled, or when another unfinished job now holds its idempotency key.
CREATE OR REPLACE FUNCTION kiroku.requeue(job_id bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    job_pool text;
BEGIN
    UPDATE kiroku.jobs AS j
    SET state = 'queued', attempt_base = j.attempt, run_after = now(), finished_at = NULL, started_at = NULL,
        error = NULL, error_kind = NULL, result = NULL, timings = NULL, lease_expires_at = NULL, lease_token_hash = NULL
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

-- Deletes up to max_rows jobs that finished before now() - older_than; returns how many. An
-- original whose shadow duplicate is unfinished waits for it.
CREATE OR REPLACE FUNCTION kiroku.prune(older_than interval, max_rows integer DEFAULT 10000) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH doomed AS MATERIALIZED (
        SELECT j.id
        FROM kiroku.jobs AS j
        WHERE j.state IN ('succeeded', 'failed', 'cancelled')
          AND j.finished_at < now() - prune.older_than
          AND NOT EXISTS (SELECT 1 FROM kiroku.jobs AS d
                          WHERE d.shadow_of = j.id AND d.state IN ('queued', 'running'))
        ORDER BY j.finished_at
        LIMIT greatest(prune.max_rows, 0)
        FOR UPDATE SKIP LOCKED
    ),
    deleted AS (
        DELETE FROM kiroku.jobs AS j WHERE j.id = ANY (ARRAY(SELECT doomed.id FROM doomed)) RETURNING 1
    )
    SELECT count(*)::integer FROM deleted
$$;

-- Privileges -----------------------------------------------------------------------------------

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA kiroku FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA kiroku FROM PUBLIC;

GRANT EXECUTE ON FUNCTION
    kiroku.claim(text, text, integer, interval, bigint),
    kiroku.heartbeat(text, bigint[], text[], interval),
    kiroku.complete(bigint, text, jsonb),
    kiroku.complete_many(bigint[], text[], jsonb[]),
    kiroku.fail(bigint, text, text, boolean, boolean),
    kiroku.release(bigint[], text[])
TO kiroku_worker;
GRANT SELECT ON kiroku.settings TO kiroku_producer, kiroku_worker;

-- Admins: data, not structure. No TRIGGER, TRUNCATE or REFERENCES; schema_migrations read-only.
REVOKE ALL ON ALL TABLES IN SCHEMA kiroku FROM kiroku_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON
    kiroku.jobs, kiroku.workers, kiroku.routes, kiroku.recommendations, kiroku.shadow
TO kiroku_admin;
-- Image bytes enter through the enqueue functions only (which record their size for the claim's
-- budget); the cap changes through kiroku.set_max_inline_bytes only.
GRANT SELECT, DELETE ON kiroku.job_images TO kiroku_admin;
GRANT SELECT ON kiroku.settings, kiroku.schema_migrations, kiroku.queue_depth, kiroku.recent_throughput, kiroku.shadow_pairs TO kiroku_admin;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kiroku TO kiroku_admin;
