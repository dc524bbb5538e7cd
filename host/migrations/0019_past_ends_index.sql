-- no-transaction
-- The versions of the past by when they ended (0018), for `as_of` searches. Built without
-- holding the table's writes (`CONCURRENTLY`, which cannot run in a transaction: so this
-- file is its one statement). A build that was interrupted leaves an invalid index that
-- `IF NOT EXISTS` would take for done: drop it (`DROP INDEX CONCURRENTLY memories_ended`)
-- and start a node again (docs/postgres.md, "Migrations").
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_ended ON memories (account_id, ended_at)
    WHERE NOT counted
