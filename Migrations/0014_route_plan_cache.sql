-- 0014: a plain INSERT picks its pool without planning a query for every row.
-- kiroku.route_pool() (the pool column's default) and kiroku.pick_route() were SQL-language
-- functions. PostgreSQL 15 cannot inline a SECURITY DEFINER function and plans a SQL function's
-- query again on every call, so each inserted row planned the routing query twice: one
-- server-side INSERT of 100,000 jobs ran at about 5,600 rows/s, 71% of its time in those calls.
-- As PL/pgSQL their plans are cached for the session. Same arguments, results and privileges.

SET LOCAL ROLE kiroku_owner;

CREATE OR REPLACE FUNCTION kiroku.pick_route(x double precision) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN coalesce((
        SELECT r.pool
        FROM (SELECT pool, sum(weight) OVER (ORDER BY pool) AS upto, sum(weight) OVER () AS total
              FROM kiroku.routes WHERE weight > 0) AS r
        WHERE r.upto > pick_route.x * r.total
        ORDER BY r.upto
        LIMIT 1), 'cpu');
END
$$;

CREATE OR REPLACE FUNCTION kiroku.route_pool() RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN kiroku.pick_route(kiroku.uniform());
END
$$;
