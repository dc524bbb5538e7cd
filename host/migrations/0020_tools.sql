-- Tenants' registered tools (HTTP endpoints and remote MCP servers): the record as JSON
-- beside the columns queries select on. Keyed by account_id first (Citus-ready); a secret
-- is in the record only sealed, under a key kept outside the database ([tools]
-- secret_key_file), and `key_id` names that key, so a node given another key is found at
-- start.
CREATE TABLE tools (
    account_id text NOT NULL,
    name text NOT NULL,
    key_id text,
    record jsonb NOT NULL,
    PRIMARY KEY (account_id, name)
);
