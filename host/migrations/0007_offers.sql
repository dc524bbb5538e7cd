-- A spawn taken by a node at its admission cap is offered to every node: its row has
-- epoch 0 (no node runs it yet; the node offering it is the owner while it waits) and
-- carries what the run is allowed, from the plan at the spawn, so the node claiming it
-- runs it as the node that admitted it would have.
ALTER TABLE agents
    ADD COLUMN memory_quota bigint,
    ADD COLUMN cpu_budget_ms bigint;

-- The offers waiting for a node, oldest first.
CREATE INDEX agents_offered ON agents (created_at) WHERE epoch = 0 AND status = 'spawning';
