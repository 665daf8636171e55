-- 0001: the job queue's tables, indexes and views.
--
-- Design notes (what River, Oban, graphile-worker, PgQueuer and Procrastinate learned):
-- * The hot table holds small rows only. Image bytes live in kiroku.job_images, stored EXTERNAL
--   (JPEG does not compress), so claims, heartbeats and completions never rewrite them.
-- * The claim reads one partial index, kiroku.jobs_runnable, which holds queued rows only and is
--   keyed in exactly the claim's ORDER BY (pool, priority DESC, id). Running and finished rows
--   never sit in it, so a claim does not wade through them.
-- * fillfactor leaves free space on every page so a row's new version lands on the same page.
--   Updates that change no indexed column (heartbeats, lease renewals, worker bookkeeping) are
--   HOT. A claim or a completion changes `state`, which the partial indexes' predicates read, so
--   PostgreSQL cannot make those HOT; they still update in place on the same page and the
--   dead versions are pruned by page pruning and the aggressive per-table autovacuum below.
-- * Finished rows are pruned (kiroku.prune, `kiroku prune`), in batches, by a partial index.

CREATE SCHEMA IF NOT EXISTS kiroku;

CREATE TABLE kiroku.jobs (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state            text        NOT NULL DEFAULT 'queued',
    pool             text        NOT NULL DEFAULT 'cpu',
    model            text        NOT NULL DEFAULT 'default',
    priority         integer     NOT NULL DEFAULT 0,
    -- The image: inline bytes in kiroku.job_images (image_inline) or a URI, never both.
    image_inline     boolean     NOT NULL DEFAULT false,
    image_uri        text,
    -- SHA-256 of the image bytes: set at enqueue for inline images.
    content_hash     bytea,
    -- Unique among unfinished jobs (index jobs_idempotency_key).
    idempotency_key  text,
    attempt          integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL DEFAULT 5,
    run_after        timestamptz NOT NULL DEFAULT now(),
    enqueued_at      timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    -- The lease: which worker holds the current attempt, and until when.
    worker_id        text,
    lease_expires_at timestamptz,
    result           jsonb,
    error            text,
    error_kind       text,
    -- Per-stage timings in milliseconds (fetch, decode, inference, ...), from the result.
    timings          jsonb,
    CONSTRAINT jobs_state_valid
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    CONSTRAINT jobs_error_kind_valid
        CHECK (error_kind IN ('permanent', 'exhausted')),
    CONSTRAINT jobs_error_kind_only_when_failed
        CHECK (error_kind IS NULL OR state = 'failed'),
    CONSTRAINT jobs_attempts_valid
        CHECK (attempt >= 0 AND max_attempts >= 1),
    CONSTRAINT jobs_image_uri_scheme
        CHECK (image_uri ~ '^(file|https?)://'),
    CONSTRAINT jobs_one_image_source
        CHECK (image_inline = (image_uri IS NULL)),
    CONSTRAINT jobs_running_holds_lease
        CHECK (state <> 'running' OR (worker_id IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT jobs_finished_has_time
        CHECK ((state IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL))
) WITH (
    fillfactor = 60,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.05,
    autovacuum_vacuum_cost_limit = 2000
);

COMMENT ON TABLE kiroku.jobs IS 'Image classification jobs: the queue (queued, running) and recent history (pruned).';

-- The claim's index: runnable rows only, in exactly the claim's ORDER BY.
CREATE INDEX jobs_runnable ON kiroku.jobs (pool, priority DESC, id) WHERE state = 'queued';

-- Lease expiry scans running rows only; keyed on id so heartbeats (lease_expires_at) stay HOT.
CREATE INDEX jobs_running ON kiroku.jobs (id) WHERE state = 'running';

-- Results, history and pruning read finished rows by finish time.
CREATE INDEX jobs_finished ON kiroku.jobs (finished_at) WHERE state IN ('succeeded', 'failed', 'cancelled');

-- An idempotency key names at most one unfinished job.
CREATE UNIQUE INDEX jobs_idempotency_key ON kiroku.jobs (idempotency_key)
    WHERE idempotency_key IS NOT NULL AND state IN ('queued', 'running');

CREATE TABLE kiroku.job_images (
    job_id bigint PRIMARY KEY REFERENCES kiroku.jobs (id) ON DELETE CASCADE,
    image  bytea  NOT NULL
);
ALTER TABLE kiroku.job_images ALTER COLUMN image SET STORAGE EXTERNAL;
COMMENT ON TABLE kiroku.job_images IS 'Inline image bytes, kept out of the hot jobs rows.';

CREATE TABLE kiroku.workers (
    id         text        PRIMARY KEY,
    host       text        NOT NULL,
    pool       text        NOT NULL,
    model      text        NOT NULL,
    cores      integer     NOT NULL CHECK (cores >= 1),
    version    text        NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    last_seen  timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz
) WITH (fillfactor = 50);
COMMENT ON TABLE kiroku.workers IS 'One row per worker process start; last_seen is renewed by kiroku.heartbeat.';

-- Per pool: jobs waiting, jobs in flight, and how long the oldest waiting job has waited.
CREATE VIEW kiroku.queue_depth AS
SELECT pool,
       count(*) FILTER (WHERE state = 'queued')                          AS queued,
       count(*) FILTER (WHERE state = 'queued' AND run_after <= now())   AS ready,
       count(*) FILTER (WHERE state = 'running')                         AS running,
       coalesce(now() - min(enqueued_at) FILTER (WHERE state = 'queued'),
                interval '0')                                            AS oldest_queued_age
FROM kiroku.jobs
WHERE state IN ('queued', 'running')
GROUP BY pool;

-- Per pool, over the last five minutes: finished jobs, throughput, service time and queue wait.
CREATE VIEW kiroku.recent_throughput AS
SELECT pool,
       count(*)                                                       AS finished,
       count(*) FILTER (WHERE state = 'succeeded')                    AS succeeded,
       count(*) FILTER (WHERE state = 'failed')                       AS failed,
       (count(*) / 300.0)::float8                                     AS jobs_per_second,
       avg(extract(epoch FROM finished_at - started_at))::float8      AS mean_service_seconds,
       avg(extract(epoch FROM started_at - enqueued_at))::float8      AS mean_wait_seconds
FROM kiroku.jobs
WHERE state IN ('succeeded', 'failed', 'cancelled')
  AND finished_at >= now() - interval '5 minutes'
  AND started_at IS NOT NULL
GROUP BY pool;
