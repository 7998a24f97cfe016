-- The run queue: runs submitted to be started by a worker, their public status, and a
-- notification when one becomes claimable.
ALTER TABLE runs
    -- What a worker starts the run from: the task (its path, digest and text) and the
    -- resolved planner options; NULL for a run started in place (`toolhost run`).
    ADD COLUMN spec             jsonb,
    -- What a person or an API client is shown; `state` stays what claims look at.
    ADD COLUMN status           text    NOT NULL DEFAULT 'running' CHECK (status IN
        ('queued', 'running', 'waiting_for_decision', 'completed', 'failed', 'cancelled')),
    -- Why the run stopped (`completed`, `budget_exhausted (steps)`, `escalated: …`).
    ADD COLUMN stop_reason      text,
    ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false,
    -- The executor pool whose workers may claim the run; NULL: any worker.
    ADD COLUMN pool             text,
    -- Claims of the run that took an unreleased (expired) lease over.
    ADD COLUMN takeovers        integer NOT NULL DEFAULT 0 CHECK (takeovers >= 0);

-- A run whose lease is free and that is to be carried on wakes the workers that LISTEN.
-- (An expired lease frees a run without a write: workers poll for those as well.)
CREATE FUNCTION toolhost_notify_claimable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.state = 'active' AND NEW.lease_owner IS NULL THEN
        PERFORM pg_notify('toolhost_runs', NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_claimable
    AFTER INSERT OR UPDATE OF state, lease_owner ON runs
    FOR EACH ROW EXECUTE FUNCTION toolhost_notify_claimable();

-- The fencing epoch of the lease each record was appended under: epochs never go down
-- along a journal, so a record of a fenced-off writer after a takeover would show.
ALTER TABLE journal_records ADD COLUMN epoch bigint;
