-- Executor pools: the calls of tools whose policy names a pool, queued by the run's owner
-- (the one writer of its journal), claimed by a worker of that pool under a lease with a
-- fencing epoch, run there under the worker's own policy, and their outcome written back
-- for the owner to journal.
CREATE TABLE step_calls (
    id            bigserial   PRIMARY KEY,
    run_id        text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step_id       text        NOT NULL,
    revision      integer     NOT NULL CHECK (revision >= 0),
    -- Claims of the call: a call whose worker died is queued again (when it is
    -- idempotent) as the next attempt.
    attempt       integer     NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    pool          text        NOT NULL,
    tool          text        NOT NULL,
    operation     text        NOT NULL,
    -- The resolved arguments, the limits the owner resolved and the component's digest.
    call          jsonb       NOT NULL,
    idempotent    boolean     NOT NULL,
    -- `queued` (until `claim_by`), `claimed` (by `claimed_by` until `lease_expires`),
    -- `done` (`outcome` written), `withdrawn` (by the owner: cancelled, or nobody took it),
    -- `lost` (its worker died in a call that may not run twice).
    status        text        NOT NULL DEFAULT 'queued' CHECK (status IN
        ('queued', 'claimed', 'done', 'withdrawn', 'lost')),
    claim_by      timestamptz NOT NULL,
    claimed_by    text,
    lease_expires timestamptz,
    epoch         bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    -- The result or error, the fuel and the sandbox's decisions (JSON).
    outcome       jsonb,
    queued_at     timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz,
    -- A finished call keeps the name of the worker that ran it.
    CHECK (status <> 'claimed' OR (claimed_by IS NOT NULL AND lease_expires IS NOT NULL)),
    CHECK ((status = 'done') = (outcome IS NOT NULL))
);

-- What the workers of a pool scan: queued calls, oldest first.
CREATE INDEX step_calls_queued ON step_calls (pool, id) WHERE status = 'queued';
CREATE INDEX step_calls_of_run ON step_calls (run_id);

-- A queued call wakes the pools' workers (payload: the pool); any other change of status
-- wakes the owners waiting for outcomes (payload: the call's id).
CREATE FUNCTION toolhost_notify_call() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'queued' THEN
        PERFORM pg_notify('toolhost_calls', NEW.pool);
    ELSE
        PERFORM pg_notify('toolhost_call_ended', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER step_calls_changed
    AFTER INSERT OR UPDATE OF status ON step_calls
    FOR EACH ROW EXECUTE FUNCTION toolhost_notify_call();
