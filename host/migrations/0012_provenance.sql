-- Provenance and observation time of memory versions (issue 26).
-- `provenance`: who wrote each version and by which door (`{"door": …, "key_id"?,
-- "agent_id"?, "step"?, "replaced"?}`, as the embedded store keeps it in the row's JSON).
-- `observed_at`: when the version's fact was stated or observed (epoch ms; the write time
-- unless the writer gave one). Both null on rows written before these columns: such a
-- row's fact counts as observed when it was written (`updated_at`).
ALTER TABLE memories
    ADD COLUMN provenance jsonb,
    ADD COLUMN observed_at bigint;
