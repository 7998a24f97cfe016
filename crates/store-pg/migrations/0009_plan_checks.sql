-- Draft edits of a plan under review, checked by the run's holder: any replica inserts a
-- draft (the console's editor, POST /v1/runs/{id}/plan/check) and notifies
-- `toolhost_changes`; the holder, waiting for the decision, writes the problems it finds;
-- the replica reads them and deletes the row. Checking a draft decides nothing.
CREATE TABLE plan_checks (
    id         bigserial   PRIMARY KEY,
    run_id     text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    draft      jsonb       NOT NULL,
    problems   jsonb,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX plan_checks_open ON plan_checks (run_id) WHERE problems IS NULL;
