-- Runs served over the API by replicas that share this database: a run parked for a
-- person's decision shows what is pending, the decision arrives in its row from whichever
-- replica took it, and changes wake those who follow a run.
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN
    ('queued', 'running', 'waiting_for_approval', 'waiting_for_decision', 'completed',
     'failed', 'cancelled'));
ALTER TABLE runs
    -- What the run waits for a person to decide (the API's `pending`), while
    -- `waiting_for_approval`.
    ADD COLUMN pending  jsonb,
    -- The person's answer: to `pending` (taken by the run's holder), or on the unfinished
    -- steps of a run `waiting_for_decision` (`rerun`/`abandon`, taken by its next claimer).
    ADD COLUMN decision jsonb;

-- A journal append, a decision or a cancellation wakes whoever follows the run (SSE
-- followers, the worker waiting for a decision); the payload is the run's id.
CREATE FUNCTION toolhost_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolhost_changes', NEW.run_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER journal_appended
    AFTER INSERT ON journal_records
    FOR EACH ROW EXECUTE FUNCTION toolhost_notify_changed();

CREATE FUNCTION toolhost_notify_decided() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('toolhost_changes', NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_decided
    AFTER UPDATE OF decision, cancel_requested, status ON runs
    FOR EACH ROW EXECUTE FUNCTION toolhost_notify_decided();
