-- Tenants' uploaded components (the postgres backend's part of the agents domain): the
-- metadata as JSON beside the columns queries select on, and the bytes, so any node can
-- compile and run a component another node took the upload of. Keyed by account_id first
-- (Citus-ready): identical bytes uploaded by several accounts are kept once per account.

-- List positions: global and growing with upload order, like the embedded store's.
CREATE SEQUENCE component_seq;

CREATE TABLE components (
    account_id text NOT NULL,
    component_id text NOT NULL,
    name text NOT NULL,
    version text NOT NULL,
    sha256 text NOT NULL,
    seq bigint NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (account_id, component_id)
);

CREATE UNIQUE INDEX components_by_name ON components (account_id, name, version);
CREATE INDEX components_by_account ON components (account_id, seq DESC);
CREATE INDEX components_by_digest ON components (account_id, sha256);

-- The bytes of an account's components, once per digest.
CREATE TABLE component_bytes (
    account_id text NOT NULL,
    sha256 text NOT NULL,
    bytes bytea NOT NULL,
    PRIMARY KEY (account_id, sha256)
);

-- Per digest, across accounts: how many components have it, and how long its first
-- validation took (every later upload of the same bytes answers no sooner, so no account
-- can tell from the time that another uploaded them). Keyed by digest alone: in the Citus
-- plan a reference table, as the key-hash lookup is the accounts domain's exception.
CREATE TABLE component_digests (
    sha256 text PRIMARY KEY,
    refs bigint NOT NULL,
    validation_us bigint NOT NULL
);
