-- MCP tasks (`toolhost mcp --http --database`): a long call answered at once with a task
-- id, run by the replica holding the task's lease, its status and result read by any
-- replica. A replica that dies leaves its lease to lapse; another takes the task over and
-- runs the call again only when the operation is idempotent by policy, else ends it
-- `failed`, naming why.
CREATE TABLE mcp_tasks (
    id            text        PRIMARY KEY,
    -- Who may see it: `stateless` (whoever holds the id) or `session:REPLICA:N`.
    owner         text        NOT NULL,
    -- The MCP tool name the call was made to.
    operation     text        NOT NULL,
    args_sha256   text        NOT NULL,
    -- The arguments, kept only when the call may be run again (idempotent by policy).
    args          jsonb,
    idempotent    boolean     NOT NULL,
    status        text        NOT NULL DEFAULT 'working' CHECK (status IN
        ('working', 'completed', 'failed', 'cancelled')),
    -- The call's result (`completed`) or error (`failed`).
    outcome       jsonb,
    ttl_ms        bigint      NOT NULL CHECK (ttl_ms > 0),
    -- The replica running the call, until `lease_expires` unless it renews.
    holder        text,
    lease_expires timestamptz,
    epoch         bigint      NOT NULL DEFAULT 1 CHECK (epoch >= 1),
    takeovers     integer     NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (status <> 'working' OR (holder IS NOT NULL AND lease_expires IS NOT NULL)),
    CHECK ((status IN ('completed', 'failed')) = (outcome IS NOT NULL))
);

CREATE INDEX mcp_tasks_of_owner ON mcp_tasks (owner, created_at);
CREATE INDEX mcp_tasks_working ON mcp_tasks (lease_expires) WHERE status = 'working';

-- A cancelled task wakes the replica running it (payload: the task's id).
CREATE FUNCTION toolhost_notify_task_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'cancelled' AND OLD.status = 'working' THEN
        PERFORM pg_notify('toolhost_task_cancel', NEW.id);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER mcp_tasks_cancelled
    AFTER UPDATE OF status ON mcp_tasks
    FOR EACH ROW EXECUTE FUNCTION toolhost_notify_task_cancel();
