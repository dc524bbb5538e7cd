-- Each posting carries its field's length norm, and the primary key's index carries the
-- posting's tf and norm, so keyword search scores postings from that index alone, without
-- visiting the memories (wide rows, with their vectors); only the best-scored memories are
-- then read to check the search's filters.
ALTER TABLE memory_terms ADD COLUMN norm integer;
UPDATE memory_terms t
SET norm = CASE t.field WHEN 0 THEN m.key_norm ELSE m.value_norm END
FROM memories m
WHERE m.account_id = t.account_id AND m.id = t.id;
ALTER TABLE memory_terms
    ALTER COLUMN norm SET NOT NULL,
    DROP CONSTRAINT memory_terms_pkey,
    ADD PRIMARY KEY (account_id, field, term, id) INCLUDE (tf, norm);
