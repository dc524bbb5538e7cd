-- Only accounts searched through the HNSW index — those past the exact-scan size — have
-- their rows in it, so a put into a smaller account (most accounts) skips the graph
-- insertion, a write's dearest part. On an account, `indexed` says its vector searches may
-- use the index: every counted row of it is in it, and its new rows go in as written. On a
-- row, it says the row is in the index (the index is partial on it, made by the binary for
-- the embedder's dimensions, replacing the one over every row).
ALTER TABLE memory_accounts ADD COLUMN indexed boolean NOT NULL DEFAULT false;
ALTER TABLE memories ADD COLUMN indexed boolean NOT NULL DEFAULT false;
