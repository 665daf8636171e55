-- 0006: routing weights for parallel running. While a legacy pool (e.g. the GPU service) and the
-- CPU pool run side by side, jobs enqueued without an explicit pool are assigned to a pool at
-- random in proportion to its weight (`kiroku route set cpu=20 gpu=80`). No routes: 'cpu', as
-- before. A job with an explicit pool keeps it.

CREATE TABLE kiroku.routes (
    pool       text        PRIMARY KEY,
    weight     integer     NOT NULL CHECK (weight >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE kiroku.routes IS 'Routing weights: jobs without a pool go to a pool with probability weight / total.';

-- The pool a uniform draw x in [0, 1) falls in, by cumulative weight; 'cpu' without routes.
CREATE FUNCTION kiroku.pick_route(x double precision) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce((
        SELECT r.pool
        FROM (SELECT pool, sum(weight) OVER (ORDER BY pool) AS upto, sum(weight) OVER () AS total
              FROM kiroku.routes WHERE weight > 0) AS r
        WHERE r.upto > pick_route.x * r.total
        ORDER BY r.upto
        LIMIT 1), 'cpu')
$$;

-- A routed pool for one job: the default of kiroku.jobs.pool, so a plain INSERT is routed too.
CREATE FUNCTION kiroku.route_pool() RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT kiroku.pick_route(random())
$$;

ALTER TABLE kiroku.jobs ALTER COLUMN pool SET DEFAULT kiroku.route_pool();

-- Replaces the weights: pools[i] gets weights[i]; pools not listed are removed from routing.
CREATE FUNCTION kiroku.set_routes(pools text[], weights integer[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(cardinality(set_routes.pools), 0) <> coalesce(cardinality(set_routes.weights), 0) THEN
        RAISE EXCEPTION 'kiroku.set_routes: pools and weights differ in length' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(set_routes.weights) AS w WHERE w IS NULL OR w < 0) THEN
        RAISE EXCEPTION 'kiroku.set_routes: weights must be zero or more' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM kiroku.routes;
    INSERT INTO kiroku.routes (pool, weight) SELECT t.pool, t.weight FROM unnest(set_routes.pools, set_routes.weights) AS t(pool, weight);
END
$$;

-- The enqueue of 0002 becomes the inner step; the new kiroku.enqueue_many routes jobs without a
-- pool (one draw per job), then calls it. kiroku.enqueue and kiroku.enqueue_uri call
-- kiroku.enqueue_many by name, so they route too.
ALTER FUNCTION kiroku.enqueue_many(bytea[], text[], text[], integer[], text[], text[], timestamptz[]) RENAME TO enqueue_many_unrouted;

CREATE FUNCTION kiroku.enqueue_many(
    images bytea[], uris text[], models text[], priorities integer[], pools text[],
    idempotency_keys text[], run_afters timestamptz[])
RETURNS TABLE (ordinal integer, job_id bigint, created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    routed text[] := enqueue_many.pools;
BEGIN
    IF EXISTS (SELECT 1 FROM kiroku.routes WHERE weight > 0) THEN
        routed := ARRAY(SELECT coalesce(t.pool, kiroku.pick_route(t.x))
                        FROM (SELECT u.pool, u.n, random() AS x FROM unnest(enqueue_many.pools) WITH ORDINALITY AS u(pool, n)) AS t
                        ORDER BY t.n);
    END IF;
    RETURN QUERY SELECT * FROM kiroku.enqueue_many_unrouted(enqueue_many.images, enqueue_many.uris, enqueue_many.models,
                                                           enqueue_many.priorities, routed, enqueue_many.idempotency_keys,
                                                           enqueue_many.run_afters);
END
$$;

REVOKE ALL ON FUNCTION kiroku.enqueue_many_unrouted(bytea[], text[], text[], integer[], text[], text[], timestamptz[]) FROM PUBLIC, kiroku_producer;
REVOKE ALL ON FUNCTION kiroku.enqueue_many(bytea[], text[], text[], integer[], text[], text[], timestamptz[]),
                       kiroku.pick_route(double precision), kiroku.route_pool(), kiroku.set_routes(text[], integer[]) FROM PUBLIC;
REVOKE ALL ON kiroku.routes FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kiroku.enqueue_many(bytea[], text[], text[], integer[], text[], text[], timestamptz[]),
                          kiroku.route_pool(), kiroku.pick_route(double precision) TO kiroku_producer, kiroku_admin;
GRANT EXECUTE ON FUNCTION kiroku.set_routes(text[], integer[]), kiroku.enqueue_many_unrouted(bytea[], text[], text[], integer[], text[], text[], timestamptz[])
    TO kiroku_admin;
GRANT SELECT ON kiroku.routes TO kiroku_producer, kiroku_worker, kiroku_admin;
GRANT ALL ON kiroku.routes TO kiroku_admin;
