-- A run a person rejected has a status of its own, `rejected`, rather than `failed`.
ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN
    ('queued', 'running', 'waiting_for_approval', 'waiting_for_decision', 'completed',
     'failed', 'rejected', 'cancelled'));
