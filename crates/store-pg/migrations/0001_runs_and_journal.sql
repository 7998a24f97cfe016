-- Runs and their journals. A run is written by the one holder of its lease; every
-- takeover bumps `epoch`, the fencing token each journal append is checked against.
CREATE TABLE runs (
    id            text        PRIMARY KEY,
    -- `active`: to be carried on by whoever holds (or next claims) the lease;
    -- `stopped`: ended, claimed by nobody.
    state         text        NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'stopped')),
    lease_owner   text,
    lease_expires timestamptz,
    epoch         bigint      NOT NULL DEFAULT 0 CHECK (epoch >= 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((lease_owner IS NULL) = (lease_expires IS NULL))
);

-- What `claim_next` scans: active runs, oldest change first.
CREATE INDEX runs_claimable ON runs (updated_at) WHERE state = 'active';

-- One row per journal line, its bytes exactly as the file journal writes them (with the
-- newline), so the hash chain is over the same bytes.
CREATE TABLE journal_records (
    run_id     text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        bigint      NOT NULL CHECK (seq >= 1),
    line       bytea       NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, seq)
);
