-- The console's own signing key (ES256, PKCS#8 PEM), one for every node: a token
-- `wasmind console login` signs is accepted by any of them. The first node (or CLI) that
-- needs it inserts it; the others read that one. Not an account's: on Citus, a reference
-- table.
CREATE TABLE console_own_key (
    id smallint PRIMARY KEY CHECK (id = 1),
    pem text NOT NULL
);
