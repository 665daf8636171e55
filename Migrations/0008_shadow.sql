-- 0008: shadow comparison for parallel running. A sample of new jobs in one pool of a pair (say
-- cpu and gpu) is duplicated to the other pool, linked to the original by shadow_of; comparing
-- the two results says whether the pools agree before cutting over. The duplicate is a job of
-- its own: it never changes the original's result, and its own result is only compared.

CREATE TABLE kiroku.shadow (
    singleton  boolean          PRIMARY KEY DEFAULT true CHECK (singleton),
    fraction   double precision NOT NULL CHECK (fraction >= 0 AND fraction <= 1),
    pool_a     text             NOT NULL,
    pool_b     text             NOT NULL CHECK (pool_b <> pool_a),
    updated_at timestamptz      NOT NULL DEFAULT now()
);
COMMENT ON TABLE kiroku.shadow IS 'Shadow sampling: this fraction of new jobs in pool_a or pool_b is duplicated to the other.';

ALTER TABLE kiroku.jobs ADD COLUMN shadow_of bigint REFERENCES kiroku.jobs (id) ON DELETE CASCADE;
CREATE INDEX jobs_shadow_of ON kiroku.jobs (shadow_of) WHERE shadow_of IS NOT NULL;

-- Sets the sampling (fraction 0 turns it off).
CREATE FUNCTION kiroku.set_shadow(fraction double precision, pool_a text, pool_b text) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO kiroku.shadow AS s (fraction, pool_a, pool_b) VALUES (set_shadow.fraction, set_shadow.pool_a, set_shadow.pool_b)
    ON CONFLICT (singleton) DO UPDATE SET fraction = EXCLUDED.fraction, pool_a = EXCLUDED.pool_a, pool_b = EXCLUDED.pool_b, updated_at = now()
$$;

-- kiroku.enqueue_many of 0006, plus the shadow sample: after the jobs are enqueued (routed), a
-- sample of the newly created ones in either pool of the pair is enqueued again in the other
-- pool (same image or URI, model and priority; no idempotency key) and linked by shadow_of.
-- The returned ids are the originals'.
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
                        FROM (SELECT u.pool, u.n, random() AS x FROM unnest(enqueue_many.pools) WITH ORDINALITY AS u(pool, n)) AS t
                        ORDER BY t.n);
    END IF;
    SELECT array_agg(e.job_id ORDER BY e.ordinal), array_agg(e.created ORDER BY e.ordinal) INTO ids, fresh
    FROM kiroku.enqueue_many_unrouted(enqueue_many.images, enqueue_many.uris, enqueue_many.models,
                                      enqueue_many.priorities, routed, enqueue_many.idempotency_keys,
                                      enqueue_many.run_afters) AS e;

    SELECT * INTO config FROM kiroku.shadow AS s WHERE s.fraction > 0;
    IF FOUND THEN
        sample := ARRAY(SELECT t.n::integer FROM unnest(fresh) WITH ORDINALITY AS t(is_new, n)
                        WHERE t.is_new AND coalesce(routed[t.n], 'cpu') IN (config.pool_a, config.pool_b)
                          AND random() < config.fraction
                        ORDER BY t.n);
        IF cardinality(sample) > 0 THEN
            -- Two statements: rows the inner enqueue inserts are not visible to a scan begun
            -- in the same statement.
            SELECT array_agg(d.job_id ORDER BY d.ordinal) INTO duplicate_ids
            FROM kiroku.enqueue_many_unrouted(
                    ARRAY(SELECT enqueue_many.images[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.uris[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.models[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT enqueue_many.priorities[m] FROM unnest(sample) AS m),
                    ARRAY(SELECT CASE WHEN coalesce(routed[m], 'cpu') = config.pool_a THEN config.pool_b ELSE config.pool_a END
                          FROM unnest(sample) AS m),
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

-- Pairs of (original, duplicate) that both succeeded: the material of `kiroku shadow show`.
CREATE VIEW kiroku.shadow_pairs AS
SELECT o.id AS original_id, d.id AS duplicate_id, o.pool AS original_pool, d.pool AS duplicate_pool,
       (o.result -> 'top' -> 0 ->> 'index')::integer AS original_top1,
       (d.result -> 'top' -> 0 ->> 'index')::integer AS duplicate_top1,
       (o.result -> 'top' -> 0 ->> 'score')::float8 AS original_score,
       (d.result -> 'top' -> 0 ->> 'score')::float8 AS duplicate_score,
       extract(epoch FROM o.finished_at - o.started_at)::float8 AS original_seconds,
       extract(epoch FROM d.finished_at - d.started_at)::float8 AS duplicate_seconds,
       greatest(o.finished_at, d.finished_at) AS compared_at
FROM kiroku.jobs AS d
JOIN kiroku.jobs AS o ON o.id = d.shadow_of
WHERE d.shadow_of IS NOT NULL AND d.state = 'succeeded' AND o.state = 'succeeded';

REVOKE ALL ON kiroku.shadow, kiroku.shadow_pairs FROM PUBLIC;
REVOKE ALL ON FUNCTION kiroku.set_shadow(double precision, text, text) FROM PUBLIC;
GRANT SELECT ON kiroku.shadow, kiroku.shadow_pairs TO kiroku_producer, kiroku_worker, kiroku_admin;
GRANT ALL ON kiroku.shadow TO kiroku_admin;
GRANT EXECUTE ON FUNCTION kiroku.set_shadow(double precision, text, text) TO kiroku_admin;
