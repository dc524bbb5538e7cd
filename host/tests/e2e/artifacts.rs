//! The artifact cache (`[runtime] artifact_cache_dir`): compiled components are native code
//! the server runs unchecked, so it refuses a directory others may write to or that is not
//! its user's, and refuses — compiling again — an artifact whose signature does not match
//! (here: another component's genuine artifact planted under the default agent's name).

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use serde_json::json;

use crate::{
    agents::wait_terminal,
    common::{Client, Options, Server, components::upload, create_key},
    guests::NOTES_AGENT,
};

/// The hash embedder, and `cache` as the artifact cache instead of the suite's shared one.
fn with_cache(cache: &Path) -> Options {
    let mut options = Options::hash_embedder();
    let cache = cache.to_str().unwrap().to_string();
    options
        .env
        .push(("WASMIND_ARTIFACT_CACHE_DIR".into(), cache));
    options
}

/// The artifacts in `cache`, by name.
fn artifacts(cache: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    found.sort();
    found
}

/// Spawns `body`'s agent and asserts it completes.
#[track_caller]
fn completes(c: &Client, body: &serde_json::Value) {
    let spawned = c.post("/api/v1/agents", body);
    assert_eq!(spawned.status, 201, "{:#}", spawned.body);
    let done = wait_terminal(c, spawned.body["agent_id"].as_str().unwrap());
    assert_eq!(done["status"], "completed", "{done:#}");
}

#[test]
fn a_cache_others_may_write_to_or_of_another_user_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let cache = tmp.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    for mode in [0o777, 0o770] {
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(mode)).unwrap();
        let log = Server::try_start(&dir, &with_cache(&cache)).err().unwrap();
        assert!(log.contains("writable by its group or others"), "{log}");
        assert!(
            log.contains(cache.to_str().unwrap()),
            "names the directory: {log}"
        );
    }
    // Another user's: a directory handed to `nobody` when the tests run as root, else
    // root's own `/`.
    let foreign = match rustix::process::geteuid().is_root() {
        true => {
            std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
            std::os::unix::fs::chown(&cache, Some(65_534), None).unwrap();
            cache
        }
        false => PathBuf::from("/"),
    };
    let log = Server::try_start(&dir, &with_cache(&foreign))
        .err()
        .unwrap();
    assert!(log.contains("not to this server's user"), "{log}");
}

#[test]
fn a_planted_artifact_is_refused_and_compiled_again() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let cache = tmp.path().join("cache");
    let options = with_cache(&cache);
    let key = create_key(&dir, "acme", "free");
    let mut server = Server::start_with(&dir, &options);
    let default = artifacts(&cache);
    assert_eq!(default.len(), 1, "the default agent's: {default:?}");
    let default = &default[0];
    let c = server.client(&key);
    upload(&c, NOTES_AGENT, "notes_agent", "1.0.0");
    let notes = artifacts(&cache)
        .into_iter()
        .find(|p| p != default)
        .expect("the uploaded component's artifact");
    server.stop();

    // A genuine artifact, of another component, under the default agent's name.
    let planted = std::fs::read(&notes).unwrap();
    std::fs::write(default, &planted).unwrap();
    let server = Server::start_with(&dir, &options);
    let log = server.log();
    assert!(
        log.contains("refused a compiled component") && log.contains(default.to_str().unwrap()),
        "{log}"
    );
    assert_ne!(
        std::fs::read(default).unwrap(),
        planted,
        "compiled again in its place"
    );
    let c = server.client(&key);
    completes(
        &c,
        &json!({ "task": "Remember that the offsite is in Porto" }),
    );

    // Damaged, the uploaded component's artifact is compiled again from its stored bytes.
    let mut damaged = std::fs::read(&notes).unwrap();
    damaged.truncate(damaged.len() / 2);
    std::fs::write(&notes, &damaged).unwrap();
    let mut server = server;
    server.stop();
    let server = Server::start_with(&dir, &options);
    let c = server.client(&key);
    completes(
        &c,
        &json!({ "task": "Remember that the offsite is in Porto", "agent": "notes_agent" }),
    );
    assert!(
        server.log().contains(notes.to_str().unwrap()),
        "{}",
        server.log()
    );
}
