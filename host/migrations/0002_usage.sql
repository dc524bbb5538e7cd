-- Metered usage per account and calendar month (UTC): agent run time, the CPU time guests
-- used, and the tokens agents' Minds spent. Rows are only ever added to.

CREATE TABLE account_usage (
    account_id text NOT NULL,
    month text NOT NULL,  -- YYYY-MM
    run_ms bigint NOT NULL,
    input_tokens bigint NOT NULL,
    output_tokens bigint NOT NULL,
    cpu_ms bigint NOT NULL,
    PRIMARY KEY (account_id, month)
);
