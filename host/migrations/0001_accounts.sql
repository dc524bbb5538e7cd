-- Accounts and their API keys (the postgres backend's `accounts` domain).
--
-- Every table is keyed by account_id first, so the schema can be distributed by account
-- (Citus) later; api_keys' lookup by hash, the one access not scoped by an account, is the
-- exception (see README, "The postgres backend").

CREATE TABLE accounts (
    account_id text PRIMARY KEY,
    plan text NOT NULL CHECK (plan IN ('free', 'liftoff', 'lightyear')),
    created_at bigint NOT NULL
);

CREATE TABLE api_keys (
    account_id text NOT NULL REFERENCES accounts (account_id),
    key_id text NOT NULL,
    -- SHA-256 (hex) of the secret: a stolen database reveals no usable key.
    key_hash text NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint,
    PRIMARY KEY (account_id, key_id)
);

CREATE UNIQUE INDEX api_keys_by_hash ON api_keys (key_hash);
CREATE UNIQUE INDEX api_keys_by_id ON api_keys (key_id);
