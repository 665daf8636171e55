-- 0007: the autoscaler's audit trail. Every recommendation it makes is recorded with the inputs it
-- was made from, so an operator can see why the fleet had the size it had, and a restarted
-- autoscaler keeps its scale-in stabilisation window.

CREATE TABLE kiroku.recommendations (
    id            bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    made_at       timestamptz NOT NULL DEFAULT now(),
    pool          text        NOT NULL,
    instance_type text        NOT NULL,
    desired       integer     NOT NULL,   -- the largest rule's answer
    recommended   integer     NOT NULL,   -- clamped to the policy's bounds
    stabilised    integer     NOT NULL,   -- what is published: out at once, in only after the window
    inputs        jsonb       NOT NULL    -- the observation, the rules' working, the cost
);
CREATE INDEX recommendations_pool_made_at ON kiroku.recommendations (pool, made_at);
COMMENT ON TABLE kiroku.recommendations IS 'Autoscaler recommendations with their inputs (an audit trail).';

REVOKE ALL ON kiroku.recommendations FROM PUBLIC;
GRANT SELECT ON kiroku.recommendations TO kiroku_producer, kiroku_worker;
GRANT ALL ON kiroku.recommendations TO kiroku_admin;
