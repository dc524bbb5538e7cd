//! The data dir is its owner's alone whatever the umask: started with umask 022, the
//! server and the CLI leave the directory 0700 and nothing in it open to group or others.

use std::{os::unix::fs::PermissionsExt, path::Path};

use serde_json::json;

use crate::common::{Options, Server, create_key, put};

/// Every path under `dir` (itself included) with its permission bits.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    let mut found = Vec::new();
    let meta = std::fs::symlink_metadata(dir).unwrap();
    found.push((dir.display().to_string(), meta.permissions().mode() & 0o777));
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir).unwrap() {
            found.extend(modes(&entry.unwrap().path()));
        }
    }
    found
}

#[test]
fn the_data_dir_is_owner_only_under_umask_022() {
    // The laxest usual umask, inherited by the CLI and the server this test starts.
    let _ = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let key = create_key(&dir, "acme", "free");
    let mut server = Server::start_with(&dir, &Options::hash_embedder());
    let c = server.client(&key);
    for i in 0..3 {
        put(
            &c,
            &json!({ "key": format!("k{i}"), "value": "a secret of acme's" }),
        );
    }
    server.stop();
    let found = modes(&dir);
    assert!(found.len() > 3, "{found:?}");
    assert_eq!(found[0].1, 0o700, "the data dir itself");
    let db = dir.join("wasmind.redb");
    let db_mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(db_mode, 0o600);
    let open: Vec<_> = found.iter().filter(|(_, m)| m & 0o077 != 0).collect();
    assert!(open.is_empty(), "open to group or others: {open:?}");
}
