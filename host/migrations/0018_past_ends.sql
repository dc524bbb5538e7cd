-- The past of an account in a form an `as_of` search can rank in SQL (issue 46).
-- `ended_at`: when a version stopped being live — its key's next version written, it was
-- deleted, or it expired, whichever came first —, set as it stops being counted. The
-- versions of the past live at an instant are then those written by it and ended after it
-- (found through `memories_ended`, 0019), with no look at their keys' other versions. Null
-- on the live versions, and on those retired before this column: the nodes fill those in
-- (see docs/postgres.md, "Migrations"), and an account with any left is searched as before.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS ended_at bigint;
-- The past's postings: a version's terms (as `memory_terms` holds the live ones') are kept
-- here when it stops being counted, so the BM25 of an `as_of` search's past runs in SQL, over
-- the versions live then, and only its best rows leave the database.
CREATE TABLE IF NOT EXISTS memory_past_terms (
    account_id text NOT NULL,
    field smallint NOT NULL,
    term text NOT NULL,
    id bigint NOT NULL,
    tf integer NOT NULL,
    norm integer NOT NULL,
    PRIMARY KEY (account_id, field, term, id) INCLUDE (tf, norm)
);
CREATE INDEX IF NOT EXISTS memory_past_terms_by_memory ON memory_past_terms (account_id, id);
