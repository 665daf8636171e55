-- 0005: what the advisor measures. Workers report their measured speed (images per second while
-- busy, which includes decoding and queue overhead: the in-container figure) and their instance
-- type; arrivals are counted by enqueue time through a BRIN index (tiny, and cheap to keep on an
-- append-mostly column).

ALTER TABLE kiroku.workers
    ADD COLUMN instance_type text,
    ADD COLUMN images_per_second double precision CHECK (images_per_second > 0),
    ADD COLUMN speed_measured_at timestamptz;

CREATE INDEX jobs_enqueued_at ON kiroku.jobs USING brin (enqueued_at);

-- Records a worker's instance type (NULL leaves it) and measured speed (NULL: not measured yet).
CREATE FUNCTION kiroku.report_worker_speed(worker_id text, instance_type text, images_per_second double precision)
RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE kiroku.workers AS w
    SET instance_type = coalesce(report_worker_speed.instance_type, w.instance_type),
        images_per_second = coalesce(report_worker_speed.images_per_second, w.images_per_second),
        speed_measured_at = CASE WHEN report_worker_speed.images_per_second IS NULL THEN w.speed_measured_at ELSE now() END,
        last_seen = now()
    WHERE w.id = report_worker_speed.worker_id
$$;

REVOKE ALL ON FUNCTION kiroku.report_worker_speed(text, text, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kiroku.report_worker_speed(text, text, double precision) TO kiroku_worker, kiroku_admin;
