-- Agent records and their log streams (the postgres backend's agents domain). The record
-- itself is JSON, as the embedded store keeps it; what queries select on is in columns.
-- Every table is keyed by account_id first (Citus-ready).

-- List positions: global and growing with spawn order, like the embedded store's.
CREATE SEQUENCE agent_seq;

CREATE TABLE agents (
    account_id text NOT NULL,
    agent_id text NOT NULL,
    seq bigint NOT NULL,
    -- The key that spawned it and when: the key's rolling spawn-rate windows.
    key_id text NOT NULL,
    created_at bigint NOT NULL,
    status text NOT NULL,
    record jsonb NOT NULL,
    -- The last log event's sequence number: appends take the next under the row's lock.
    log_seq bigint NOT NULL DEFAULT 0,
    -- The node running it (its claim), the claim's fencing epoch — every write of the run
    -- is conditional on it — and until when the node's lease holds (epoch ms); a lease
    -- that runs out fails the agent (the host was lost).
    owner text,
    epoch bigint NOT NULL,
    lease_until bigint,
    PRIMARY KEY (account_id, agent_id)
);

-- An account's agents newest first.
CREATE INDEX agents_by_account ON agents (account_id, seq DESC);
-- Agents not yet terminal: the account's concurrency and running time.
CREATE INDEX agents_alive ON agents (account_id, agent_id)
    WHERE status IN ('spawning', 'running');
-- A node's agents, and the leases that run out.
CREATE INDEX agents_owned ON agents (owner) WHERE status IN ('spawning', 'running');
CREATE INDEX agents_leases ON agents (lease_until) WHERE status IN ('spawning', 'running');
-- A key's spawns in the last hour.
CREATE INDEX agents_by_key ON agents (account_id, key_id, created_at);

CREATE TABLE agent_logs (
    account_id text NOT NULL,
    agent_id text NOT NULL,
    seq bigint NOT NULL,
    event jsonb NOT NULL,
    PRIMARY KEY (account_id, agent_id, seq)
);
