-- Budgets in plans (issue 24), carried by an offered spawn like its memory quota and CPU
-- budget (0007), so the node that claims it holds the run to what it was admitted with:
-- the Mind tokens the run may spend (the plan's `tokens_per_run`) and the versions its
-- memory writes keep per key (`versions_per_key`). Null on rows offered before these
-- columns: such a run has neither bound.
ALTER TABLE agents
    ADD COLUMN token_budget bigint,
    ADD COLUMN versions_per_key bigint;
