-- Durable agents on PostgreSQL (issue 23): every run's journal, so a restarted node, or
-- the node that claims a lost node's agents, resumes them by replay (runtime/journal).
-- Keyed by account_id first (Citus-ready), like the agents they belong to.

-- A run begun: what it was launched with, which its resume launches it with again.
-- Deleting the run deletes its journal; deleting the agent deletes both.
CREATE TABLE agent_runs (
    account_id text NOT NULL,
    agent_id text NOT NULL,
    memory_quota bigint NOT NULL,
    versions_per_key bigint NOT NULL,
    cpu_budget_ms bigint NOT NULL,
    token_budget bigint NOT NULL,
    PRIMARY KEY (account_id, agent_id),
    FOREIGN KEY (account_id, agent_id) REFERENCES agents ON DELETE CASCADE
);

-- The run's recorded calls, step 1, 2, …: the function, its arguments' hash (the 64 bits
-- as a signed bigint), when it was made (epoch ms) and its result as JSON text (text, not
-- jsonb: a result may hold any string, NUL included, and must come back as it went in).
CREATE TABLE agent_journal (
    account_id text NOT NULL,
    agent_id text NOT NULL,
    step bigint NOT NULL,
    func text NOT NULL,
    args bigint NOT NULL,
    ts bigint NOT NULL,
    result text NOT NULL,
    PRIMARY KEY (account_id, agent_id, step),
    FOREIGN KEY (account_id, agent_id) REFERENCES agent_runs ON DELETE CASCADE
);
