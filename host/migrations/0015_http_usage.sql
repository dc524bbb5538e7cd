-- Agents' outgoing HTTP (wasi:http), metered per account and month beside their run time,
-- tokens and CPU: the plans' http_requests_per_month and http_bytes_per_month are held
-- against these. Adding columns with a constant default rewrites no row.
ALTER TABLE account_usage ADD COLUMN IF NOT EXISTS http_requests BIGINT NOT NULL DEFAULT 0;
ALTER TABLE account_usage ADD COLUMN IF NOT EXISTS http_bytes BIGINT NOT NULL DEFAULT 0;
