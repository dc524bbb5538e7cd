-- `memory_nearest` (0021) with a graph scan's candidate list as long as the rows asked for
-- (`hnsw.ef_search` = k, at least 40 and at most pgvector's 1,000) where it was at least
-- 100: a search at the default limit asks for 40, and walking a graph for 100 candidates
-- cost about twice walking it for 40, which on a 10,000-memory account found 98 % of the
-- exact scan's 40 nearest against 99.8 % (BENCHMARKS.md, issue 46, "ef_search"). The rest
-- is 0021's function unchanged (see there for why it is written as it is).
--
-- The `SET` clauses name pgvector's settings, which exist once its library is loaded in
-- the session; a vector made first loads it.
SELECT '[0]'::vector;
CREATE OR REPLACE FUNCTION memory_nearest(
    account text, query vector, now bigint, namespace text, tags text[], k bigint,
    as_of bigint
) RETURNS TABLE (id bigint, distance float8)
LANGUAGE plpgsql STABLE
SET enable_sort = off
SET plan_cache_mode = force_custom_plan
SET hnsw.iterative_scan = relaxed_order
SET hnsw.ef_search = 40
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
    PERFORM set_config('hnsw.ef_search', least(greatest(k, 40), 1000)::text, true);
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
