-- The hosts the operator lets one account's agents reach over HTTP beyond everyone's and
-- its plan's (`[egress]`), set with `wasmind accounts allow-host`: a JSON array of
-- { host, ports, schemes }. A constant default rewrites no row.
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS egress jsonb NOT NULL DEFAULT '[]'::jsonb;
