-- 0003: roles. Group roles (NOLOGIN) that login roles are made members of:
--   kiroku_producer  enqueue jobs (functions or a plain INSERT of a URI job), read jobs and results
--   kiroku_worker    claim, heartbeat, complete, fail, rescue, register; read jobs
--   kiroku_admin     everything in the schema (migrations are run by the schema owner)
-- A producer cannot claim; neither a producer nor a worker can alter the schema.
-- Roles are cluster-wide: creating one that exists (another database, a concurrent run) is fine.

DO $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY['kiroku_producer', 'kiroku_worker', 'kiroku_admin'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role_name) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- created concurrently by a migration of another database
            END;
        END IF;
    END LOOP;
    BEGIN
        GRANT kiroku_producer, kiroku_worker TO kiroku_admin;
    EXCEPTION WHEN unique_violation THEN
        NULL; -- granted concurrently by a migration of another database
    END;
END
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA kiroku FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA kiroku FROM PUBLIC;

GRANT USAGE ON SCHEMA kiroku TO kiroku_producer, kiroku_worker, kiroku_admin;

-- Producers
GRANT EXECUTE ON FUNCTION
    kiroku.enqueue(bytea, text, integer, text, text, timestamptz),
    kiroku.enqueue_uri(text, text, integer, text, text, timestamptz),
    kiroku.enqueue_many(bytea[], text[], text[], integer[], text[], text[], timestamptz[]),
    kiroku.cancel(bigint)
TO kiroku_producer;
GRANT SELECT ON kiroku.jobs, kiroku.queue_depth, kiroku.recent_throughput TO kiroku_producer;
-- A plain INSERT of a URI job: only the columns a producer may set.
GRANT INSERT (pool, model, priority, image_uri, idempotency_key, run_after, max_attempts)
    ON kiroku.jobs TO kiroku_producer;

-- Workers
GRANT EXECUTE ON FUNCTION
    kiroku.claim(text, text, integer, interval),
    kiroku.heartbeat(text, bigint[], interval),
    kiroku.complete(bigint, text, integer, jsonb),
    kiroku.complete_many(text, bigint[], integer[], jsonb[]),
    kiroku.fail(bigint, text, integer, text, boolean),
    kiroku.rescue_expired(),
    kiroku.register_worker(text, text, text, text, integer, text),
    kiroku.deregister_worker(text)
TO kiroku_worker;
GRANT SELECT ON kiroku.jobs, kiroku.workers, kiroku.queue_depth, kiroku.recent_throughput TO kiroku_worker;

-- Administrators (also members of kiroku_producer and kiroku_worker, above)
GRANT ALL ON ALL TABLES IN SCHEMA kiroku TO kiroku_admin;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA kiroku TO kiroku_admin;
