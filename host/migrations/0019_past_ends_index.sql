-- The versions of the past by when they ended (0018), for `as_of` searches. A plain
-- `CREATE INDEX`, in the migration's transaction: `CONCURRENTLY` waits for every other
-- session's snapshot, among them those of nodes starting at the same time and waiting for
-- sqlx's migration lock, which wait for it in turn (PostgreSQL ends one: "deadlock
-- detected"). On a large `memories` table it holds the table's writes while it builds, so
-- apply it at a quiet time, or create it `CONCURRENTLY` by hand first with the same name
-- and definition (docs/postgres.md, "Migrations").
CREATE INDEX IF NOT EXISTS memories_ended ON memories (account_id, ended_at)
    WHERE NOT counted
