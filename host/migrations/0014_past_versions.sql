-- The past of an account: its versions that are no longer counted (superseded, deleted, or
-- expired and reaped), by when each was written. An `as_of` search reads the live versions
-- through the search indexes and only these from the table, so its cost grows with the
-- account's past, not with all of its rows (issue 26).
CREATE INDEX IF NOT EXISTS memories_past ON memories (account_id, updated_at) WHERE NOT counted;
