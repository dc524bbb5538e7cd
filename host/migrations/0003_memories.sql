-- Memories (the postgres backend's memory domain): every version, tombstone and access
-- count in `memories`; the vectors in its pgvector column; the keyword side as analyzed
-- terms per document with per-account statistics, so BM25 is computed in SQL over the
-- account's own documents. Every table is keyed by account_id first (Citus-ready).

-- Internal ids: global and growing with write order, like the embedded store's.
CREATE SEQUENCE memory_ids;

CREATE TABLE memories (
    account_id text NOT NULL,
    id bigint NOT NULL,
    memory_id text NOT NULL,
    namespace text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    tags text[] NOT NULL,
    importance double precision NOT NULL,
    source text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    access_count bigint NOT NULL,
    expires_at bigint,
    is_latest boolean NOT NULL,
    deleted_at bigint,
    version integer NOT NULL,
    previous bigint,
    consolidated_into text,
    -- Live, or expired and not yet reaped: what the quota counts and the terms describe.
    counted boolean NOT NULL,
    -- Token counts of key and value as BM25 sees them (tantivy's quantized fieldnorms).
    key_norm integer NOT NULL,
    value_norm integer NOT NULL,
    -- Unit length; its dimensions are the recorded embedder's (memory_embedder).
    embedding vector NOT NULL,
    PRIMARY KEY (account_id, id)
);

-- History (every version of a key, newest first) and the head of a key.
CREATE INDEX memories_versions ON memories (account_id, namespace, key, id DESC);
-- At most one counted version per key, whatever races between nodes.
CREATE UNIQUE INDEX memories_live_key ON memories (account_id, namespace, key) WHERE counted;
-- Lists (newest first) and the exact vector scan of an account.
CREATE INDEX memories_counted ON memories (account_id, id DESC) WHERE counted;
-- Reaping: counted memories whose expiry has passed.
CREATE INDEX memories_expiries ON memories (account_id, expires_at)
    WHERE counted AND expires_at IS NOT NULL;

-- The analyzed terms of each counted memory: field 0 = key, 1 = value.
CREATE TABLE memory_terms (
    account_id text NOT NULL,
    field smallint NOT NULL,
    term text NOT NULL,
    id bigint NOT NULL,
    tf integer NOT NULL,
    PRIMARY KEY (account_id, field, term, id)
);
CREATE INDEX memory_terms_by_memory ON memory_terms (account_id, id);

-- Per account and field: how many counted memories hold each term (BM25's n).
CREATE TABLE memory_term_stats (
    account_id text NOT NULL,
    field smallint NOT NULL,
    term text NOT NULL,
    docs bigint NOT NULL,
    PRIMARY KEY (account_id, field, term)
);

-- Per account: counted memories (the quota's used, BM25's N) and their token totals.
-- Every write of an account locks this row first, so writes of one account are serial
-- across nodes and a quota is never exceeded.
CREATE TABLE memory_accounts (
    account_id text PRIMARY KEY,
    live bigint NOT NULL DEFAULT 0,
    key_tokens bigint NOT NULL DEFAULT 0,
    value_tokens bigint NOT NULL DEFAULT 0
);

-- Which embedder made the vectors (`kind:model:dims`); nodes with another refuse to start.
CREATE TABLE memory_embedder (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    identity text NOT NULL
);
