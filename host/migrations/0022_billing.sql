-- Billing (the postgres backend's `billing` domain): each account's payment-provider
-- customer and the subscription its webhooks told of (JSON, as `billing::Subscription`),
-- the provider events applied (each once, by id), and who set each account's plan last
-- (`operator` or `billing`). A constant default rewrites no row.

CREATE TABLE IF NOT EXISTS billing_links (
    account_id text PRIMARY KEY REFERENCES accounts (account_id),
    customer_id text NOT NULL UNIQUE,
    subscription jsonb
);

CREATE TABLE IF NOT EXISTS billing_events (
    event_id text PRIMARY KEY,
    applied_at bigint NOT NULL
);

ALTER TABLE accounts ADD COLUMN IF NOT EXISTS plan_source text NOT NULL DEFAULT 'operator'
    CHECK (plan_source IN ('operator', 'billing'));
