-- Who soft-deleted a memory version, when an agent's journaled call did (issue 23):
-- `{"door": "agent_tool", "agent_id": …, "step": …}`, as the embedded store keeps it in
-- the row's JSON. A delete made again by the resumed run finds the version that same call
-- deleted and answers with it. Null for every other delete and for rows deleted before.
ALTER TABLE memories
    ADD COLUMN deleted_by jsonb;
