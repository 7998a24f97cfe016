-- MCP tasks that wait for input (SEP-2663 `input_required`): the call of a task, still
-- `working` and held by its replica, asked questions; any replica shows them in
-- `tasks/get` and takes their answers (`tasks/update`); the holder hears once all are in.
ALTER TABLE mcp_tasks
    -- The input requests not answered yet (an object keyed by the tool's keys); NULL
    -- when the call waits for nothing.
    ADD COLUMN input_requests  jsonb,
    -- The answers taken so far; once `input_requests` is NULL again, the answers the
    -- holder has yet to collect.
    ADD COLUMN input_responses jsonb,
    ADD CONSTRAINT mcp_tasks_input_while_working
        CHECK (status = 'working' OR (input_requests IS NULL AND input_responses IS NULL));
