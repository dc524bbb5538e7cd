//! How much of an exact scan's nearest an account's graph finds, and at what cost, per
//! `hnsw.ef_search` (the `backends` phase, issue 46): recall is a benchmark, never a test.
//!
//! Queries never seen by the account are embedded as queries; their exact 40 nearest (the
//! candidates a search at the default limit asks the vector side for)
//! counted memories (every distance computed) are compared with what the account's graph
//! yields — the HNSW scan as `memory_nearest` runs it (`enable_sort = off`, iterative scan,
//! each row checked against the account's counted memories), the `ef_search` varied — and
//! with `memory_nearest` itself as the migrations left it. Times are the database's alone
//! (`clock_timestamp` around the searches, in one session): no round trip, no node. The
//! exact scan is timed too: it is how an account without a graph is searched.

use std::collections::HashSet;
use std::sync::Arc;

use wasmind::memory::embed::{Embedder, Role};

use super::postgres::server::Postgres;
use super::text::Texts;

/// The `ef_search` values tried.
const EFS: [usize; 4] = [40, 60, 100, 200];

/// One line per `ef_search` and one for `memory_nearest`: recall@40 against the exact scan
/// and the database's time per search, over `n` fresh queries in `account` of `db`.
pub fn measure(
    pg: &Postgres,
    db: &str,
    account: &str,
    model: &Arc<dyn Embedder>,
    n: usize,
) -> String {
    let mut texts = Texts::new(4646);
    let queries = texts.fresh_queries(&mut HashSet::new(), n);
    let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let vectors = model
        .embed(Role::Query, &refs)
        .expect("embed the recall queries");
    let rows: Vec<String> = (vectors.iter().enumerate())
        .map(|(i, v)| {
            let v: Vec<String> = v.iter().map(f32::to_string).collect();
            format!("({i}, '[{}]')", v.join(","))
        })
        .collect();
    let efs: Vec<String> = EFS.iter().map(usize::to_string).collect();
    let sql = format!(
        "CREATE TEMP TABLE qs (qn int, v vector); INSERT INTO qs VALUES {rows}; \
         {exact} {graph} {nearest} \
         SELECT string_agg(line, '; ' ORDER BY o) FROM ( \
            SELECT 0 AS o, pg_temp.exact() AS line \
            UNION ALL SELECT ef, pg_temp.graph(ef) FROM unnest('{{{efs}}}'::int[]) ef \
            UNION ALL SELECT 1000000, pg_temp.nearest()) l",
        rows = rows.join(","),
        efs = efs.join(","),
        exact = EXACT.replace("ACCOUNT", account),
        graph = GRAPH.replace("ACCOUNT", account),
        nearest = NEAREST.replace("ACCOUNT", account),
    );
    // A statement of 100 vectors is longer than one command-line argument may be.
    let file = std::env::temp_dir().join("wasmind-bench-graph-recall.sql");
    std::fs::write(&file, sql).expect("write the recall script");
    let out = pg.psql(db, &format!("\\i {}", file.display()));
    let _ = std::fs::remove_file(&file);
    out
}

/// The exact 40 nearest of every query (the table `exact`), timed: every distance computed,
/// as `memory_nearest` scans an account without a graph.
const EXACT: &str = "\
CREATE FUNCTION pg_temp.exact() RETURNS text LANGUAGE plpgsql AS $$ \
DECLARE t0 timestamptz; ms float8; BEGIN \
  t0 := clock_timestamp(); \
  CREATE TEMP TABLE exact AS SELECT qn, e.id FROM qs CROSS JOIN LATERAL ( \
    SELECT m.id FROM memories m WHERE m.account_id = 'ACCOUNT' AND m.counted \
    ORDER BY m.embedding <=> qs.v LIMIT 40) e; \
  ms := extract(epoch FROM clock_timestamp() - t0) * 1000; \
  RETURN format('exact scan: %s ms', round((ms / (SELECT count(*) FROM qs))::numeric, 2)); \
END $$;";

/// `ef_search = ef`: the graph's 40 nearest per query, as `memory_nearest` scans a graph.
const GRAPH: &str = "\
CREATE FUNCTION pg_temp.graph(ef int) RETURNS text LANGUAGE plpgsql \
SET enable_sort = off SET hnsw.iterative_scan = relaxed_order AS $$ \
DECLARE g bigint; hits bigint; total bigint; t0 timestamptz; ms float8; BEGIN \
  SELECT graph INTO g FROM memory_accounts WHERE account_id = 'ACCOUNT'; \
  IF g IS NULL THEN RETURN 'no graph'; END IF; \
  PERFORM set_config('hnsw.ef_search', ef::text, true); \
  CREATE TEMP TABLE found (qn int, id bigint); \
  t0 := clock_timestamp(); \
  EXECUTE format('INSERT INTO found SELECT qn, n.id FROM qs CROSS JOIN LATERAL ( \
      SELECT x.id FROM memory_graph_%s x WHERE EXISTS (SELECT 1 FROM memories m \
        WHERE m.account_id = %L AND m.id = x.id AND m.counted) \
      ORDER BY x.embedding <=> qs.v LIMIT 40) n', g, 'ACCOUNT'); \
  ms := extract(epoch FROM clock_timestamp() - t0) * 1000; \
  SELECT count(*) INTO hits FROM found JOIN exact USING (qn, id); \
  SELECT count(*) INTO total FROM exact; \
  DROP TABLE found; \
  RETURN format('ef_search %s: recall %s, %s ms', ef, round(hits::numeric / total, 3), \
    round((ms / (SELECT count(*) FROM qs))::numeric, 2)); \
END $$;";

/// `memory_nearest` as deployed (its own `ef_search`), called as a search calls it.
const NEAREST: &str = "\
CREATE FUNCTION pg_temp.nearest() RETURNS text LANGUAGE plpgsql AS $$ \
DECLARE hits bigint; total bigint; t0 timestamptz; ms float8; BEGIN \
  CREATE TEMP TABLE found (qn int, id bigint); \
  t0 := clock_timestamp(); \
  INSERT INTO found SELECT qn, n.id FROM qs CROSS JOIN LATERAL \
    memory_nearest('ACCOUNT', qs.v, 0, NULL, '{}', 40, NULL) n; \
  ms := extract(epoch FROM clock_timestamp() - t0) * 1000; \
  SELECT count(*) INTO hits FROM found JOIN exact USING (qn, id); \
  SELECT count(*) INTO total FROM exact; \
  DROP TABLE found; \
  RETURN format('memory_nearest: recall %s, %s ms', round(hits::numeric / total, 3), \
    round((ms / (SELECT count(*) FROM qs))::numeric, 2)); \
END $$;";
