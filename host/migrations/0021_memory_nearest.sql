-- A search's nearest neighbours in one call (issue 46): the account's graph looked up, the
-- HNSW scan's settings made, and the search run, in the database, where before a search
-- sent those as statements of their own, one round trip each (the account's row, then a
-- transaction: `BEGIN`, the settings, the search, `COMMIT`). Returns the account's `k`
-- counted memories nearest `query` that pass the search's filters (live at `now`, in
-- `namespace` when given, holding `tags`, written by `as_of` when given), with their
-- cosine distances (unordered).
--
-- An account without a graph is scanned exactly. One with a graph (`memory_graph_<n>`,
-- its vectors alone, see 0017) is searched through it — the planner told not to sort,
-- else for a graph it may read and sort every row, and the scan iterative, so that it
-- goes on until `k` rows pass the filters, its candidate list no shorter than `k` —, and
-- its rows written since the graph was last brought up to date (ids above
-- `graphed_upto`) scanned exactly; the best `k` of the two lists kept. The settings last
-- for the call alone (the `SET` clauses; `set_config(…, true)` inside a function that has
-- one for the same setting is undone when it returns).
--
-- `plan_cache_mode`: the exact scan's statement is planned for its own arguments at every
-- call; PL/pgSQL caches its plan, and a generic plan of it (no account known) is a scan of
-- every account's rows, ~60× the custom one on a scratch cluster.
--
-- The `SET` clauses name pgvector's settings, which exist once its library is loaded in
-- the session; a vector made first loads it (before, they would be placeholders, which a
-- role that is not a superuser may not name in a function).
SELECT '[0]'::vector;
CREATE OR REPLACE FUNCTION memory_nearest(
    account text, query vector, now bigint, namespace text, tags text[], k bigint,
    as_of bigint
) RETURNS TABLE (id bigint, distance float8)
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_custom_plan
SET hnsw.iterative_scan = relaxed_order
SET hnsw.ef_search = 100
AS $fn$
DECLARE
    graph bigint;
    upto bigint;
BEGIN
    SELECT a.graph, a.graphed_upto INTO graph, upto
    FROM memory_accounts a WHERE a.account_id = memory_nearest.account;
    IF graph IS NULL THEN
        RETURN QUERY
            SELECT m.id, m.embedding <=> query FROM memories m
            WHERE m.account_id = memory_nearest.account AND m.counted
              AND (m.expires_at IS NULL OR m.expires_at > now)
              AND (memory_nearest.namespace IS NULL OR m.namespace = memory_nearest.namespace)
              AND m.tags @> memory_nearest.tags
              AND (as_of IS NULL OR m.updated_at <= as_of)
            ORDER BY 2 LIMIT k;
        RETURN;
    END IF;
    PERFORM set_config('hnsw.ef_search', least(greatest(k, 100), 1000)::text, true);
    RETURN QUERY EXECUTE format(
        'SELECT id, min(distance) FROM ( '
        '  (SELECT g.id, g.embedding <=> $2 AS distance FROM %1$I g WHERE EXISTS ( '
        '     SELECT 1 FROM memories m WHERE m.account_id = $1 AND m.id = g.id AND %2$s) '
        '   ORDER BY g.embedding <=> $2 LIMIT $6) '
        '  UNION ALL '
        '  (SELECT m.id, m.embedding <=> $2 AS distance FROM memories m '
        '   WHERE m.account_id = $1 AND m.id > $8 AND %2$s ORDER BY 2 LIMIT $6) '
        ') found GROUP BY id ORDER BY min(distance), id DESC LIMIT $6',
        'memory_graph_' || graph,
        'm.counted AND (m.expires_at IS NULL OR m.expires_at > $3) '
        'AND ($4::text IS NULL OR m.namespace = $4) AND m.tags @> $5 '
        'AND ($7::int8 IS NULL OR m.updated_at <= $7)')
    USING account, query, now, namespace, tags, k, as_of, upto;
END
$fn$;
