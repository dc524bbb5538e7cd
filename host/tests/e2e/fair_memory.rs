//! Fair memory work between accounts: one account's imports do not hold up another's
//! puts. With the real embedder, B's puts, sent after A's imports began and each once the
//! one before it was answered, all complete before A's imports (500 memories each, two
//! clients, one after another) do: B's put waits for a batch of A's, not for A's queue.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};

use crate::common::{Options, put, server_with_keys};

/// Imports each of A's two clients sends, one after another.
const ROUNDS: usize = 4;
/// Memories in each import.
const BATCH: usize = 500;
/// B's puts, one after another.
const PUTS: usize = 10;

#[test]
fn b_puts_complete_while_a_imports() {
    let accounts = [("importer", "liftoff"), ("putter", "free")];
    let (_tmp, server, keys) = server_with_keys(&accounts, &Options::default());
    let events = Mutex::new(Vec::<String>::new());
    let importing = AtomicBool::new(false);
    std::thread::scope(|s| {
        for client in 0..2 {
            let (server, key, events, importing) = (&server, &keys[0], &events, &importing);
            s.spawn(move || {
                let a = server.client(key);
                for round in 0..ROUNDS {
                    let memories: Vec<Value> = (0..BATCH)
                        .map(|i| {
                            json!({
                                "key": format!("c{client}_r{round}_{i}"),
                                "value": format!(
                                    "note {i} of round {round} from client {client}: the \
                                     build server restarts at {} am on day {round}",
                                    i % 12
                                ),
                            })
                        })
                        .collect();
                    importing.store(true, Ordering::SeqCst);
                    let r = a.post("/api/v1/memory/import", &json!({ "memories": memories }));
                    assert_eq!(r.status, 200, "{:#}", r.body);
                    assert_eq!(r.body["imported"], BATCH, "{:#}", r.body);
                    events.lock().unwrap().push(format!("a{client}.{round}"));
                }
            });
        }
        s.spawn(|| {
            while !importing.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            // A's first imports are on their way to the embedder by then.
            std::thread::sleep(Duration::from_millis(200));
            let b = server.client(&keys[1]);
            for i in 0..PUTS {
                let body = json!({ "key": format!("b{i}"), "value": format!("B's note {i}") });
                put(&b, &body);
                events.lock().unwrap().push(format!("b{i}"));
            }
        });
    });
    let events = events.into_inner().unwrap();
    let last_put = events.iter().position(|e| *e == format!("b{}", PUTS - 1));
    let imports_before = events[..last_put.unwrap()]
        .iter()
        .filter(|e| e.starts_with('a'))
        .count();
    assert!(
        imports_before < 2 * ROUNDS,
        "B's puts were answered only after all of A's imports: {events:?}"
    );
    // B's puts are all there, and A's imports too.
    let b = server.client(&keys[1]);
    assert_eq!(b.get("/api/v1/memory?key=b9").body["value"], "B's note 9");
    let a = server.client(&keys[0]);
    let last = format!("/api/v1/memory?key=c1_r{}_{}", ROUNDS - 1, BATCH - 1);
    assert_eq!(a.get(&last).status, 200);
}
