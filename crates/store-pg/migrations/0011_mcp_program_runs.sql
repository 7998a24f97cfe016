-- Programs as MCP tasks (`toolhost mcp --code --database`): a program's run is journaled
-- here, tied to its task, so that the replica that takes the task over carries the run on
-- from its journal (finished calls served from it, never made again) rather than failing
-- the task.
ALTER TABLE runs
    -- The MCP task whose replicas carry this run on; `toolhost worker`s leave it alone.
    ADD COLUMN mcp_task text UNIQUE;
ALTER TABLE mcp_tasks
    -- The capabilities of the client that made the call (JSON), so that a replica taking
    -- the task over asks the client's user only what that client can answer.
    ADD COLUMN client jsonb;
