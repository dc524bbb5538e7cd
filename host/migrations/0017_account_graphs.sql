-- Vector search by a graph of each account's own (issue 46). An account past the
-- exact-scan size gets a table of its own, `memory_graph_<graph>` (id, embedding), with an
-- HNSW index over it alone, made by the binary for the embedder's dimensions: a search walks
-- a graph holding nothing but the account's vectors, however many accounts share the
-- database, where a shared graph filtered by account visits every other account's vectors
-- too. Puts do not insert into it: its rows are added in the background, in batches, and a
-- search scans the rows written since exactly (the tail). Per account:
-- `graph` numbers its table (NULL: none yet, searched by an exact scan of its rows);
-- `graphed_upto`: every counted memory with an id up to it is in the table;
-- `ungraphed`: memories written since, about (a search past a bound starts the batch).
-- All three are added without rewriting the table (constant defaults).
CREATE SEQUENCE IF NOT EXISTS memory_graphs;
ALTER TABLE memory_accounts
    ADD COLUMN IF NOT EXISTS graph bigint,
    ADD COLUMN IF NOT EXISTS graphed_upto bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS ungraphed bigint NOT NULL DEFAULT 0;
