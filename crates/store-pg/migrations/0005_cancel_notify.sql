-- A cancellation asked for wakes the holder of the run's lease at once (it LISTENs on
-- `toolhost_cancel`, payload: the run's id), instead of at its next lease renewal.
CREATE FUNCTION toolhost_notify_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.cancel_requested AND NOT OLD.cancel_requested THEN
        PERFORM pg_notify('toolhost_cancel', NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_cancel_requested
    AFTER UPDATE OF cancel_requested ON runs
    FOR EACH ROW EXECUTE FUNCTION toolhost_notify_cancel();
