//! The admin socket: `<data-dir>/admin.sock`, a Unix socket only its owner may use, where a
//! running server takes the operator's [`Request`]s. One JSON [`Request`] per line in, one
//! JSON `Result<Response, String>` per line out; serde does all the parsing.
//!
//! The socket is bound inside a fresh owner-only (0700) directory, set to 0600 there, and
//! only then renamed into the data dir, so there is no moment when anyone else could
//! connect. The rename also replaces a socket file a killed server left behind (the server
//! holds the data dir's lock, so any socket file there is stale).

use std::{
    fs::{self, DirBuilder, Permissions},
    io::{BufRead, BufReader, Write},
    os::unix::{
        fs::{DirBuilderExt, PermissionsExt},
        net::UnixStream,
    },
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::Context;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt},
    net::UnixListener,
};

use super::{Admin, Request, Response};

/// The socket's name in the data dir.
pub const SOCKET_NAME: &str = "admin.sock";
/// Longest wait for the server's answer: every request is a few redb transactions.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// What travels back over the socket: the answer, or the error's message.
type Reply = Result<Response, String>;

/// Where the admin socket of the data dir at `data_dir` is.
pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET_NAME)
}

/// The bound socket; dropping it removes the socket file.
#[derive(Debug)]
pub struct Bound {
    listener: std::os::unix::net::UnixListener,
    path: PathBuf,
}

impl Bound {
    /// A handle on the listening socket, for [`serve`].
    pub fn listener(&self) -> std::io::Result<std::os::unix::net::UnixListener> {
        self.listener.try_clone()
    }
}

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Binds the admin socket of `data_dir` (whose lock the caller holds), mode 0600 from the
/// moment anyone can reach it, replacing a stale one.
pub fn bind(data_dir: &Path) -> anyhow::Result<Bound> {
    let target = path(data_dir);
    let staging = data_dir.join(format!(".admin-{}", std::process::id()));
    let _ = fs::remove_dir_all(&staging);
    DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .with_context(|| format!("creating {}", staging.display()))?;
    let bound = (|| {
        let staged = staging.join(SOCKET_NAME);
        let listener = std::os::unix::net::UnixListener::bind(&staged).with_context(|| {
            format!(
                "binding {} (a Unix socket path may have at most 107 bytes: use a shorter \
                 --data-dir)",
                staged.display()
            )
        })?;
        fs::set_permissions(&staged, Permissions::from_mode(0o600))?;
        fs::rename(&staged, &target)
            .with_context(|| format!("moving the admin socket to {}", target.display()))?;
        listener.set_nonblocking(true)?;
        anyhow::Ok(listener)
    })();
    let _ = fs::remove_dir_all(&staging);
    Ok(Bound {
        listener: bound?,
        path: target,
    })
}

/// Answers requests on `listener` (from [`Bound::listener`]) with `admin` until the
/// runtime stops.
pub async fn serve(listener: std::os::unix::net::UnixListener, admin: Admin) -> anyhow::Result<()> {
    let listener = UnixListener::from_std(listener)?;
    loop {
        let (stream, _) = listener.accept().await?;
        let admin = admin.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, admin).await {
                tracing::warn!(error = %e, "admin socket connection failed");
            }
        });
    }
}

/// Answers each line of one connection in turn.
async fn answer(stream: tokio::net::UnixStream, admin: Admin) -> anyhow::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = tokio::io::BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await? {
        let reply: Reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => {
                tracing::info!(op = request.op(), "admin request");
                admin.execute(request).await.map_err(|e| format!("{e:#}"))
            }
            Err(e) => Err(format!("unreadable admin request: {e}")),
        };
        let mut text = serde_json::to_string(&reply)?;
        text.push('\n');
        write.write_all(text.as_bytes()).await?;
    }
    Ok(())
}

/// A connection to the server on `data_dir`, if one answers there.
pub fn connect(data_dir: &Path) -> Option<UnixStream> {
    UnixStream::connect(path(data_dir)).ok()
}

/// Sends `request` over `stream` and waits for the answer.
pub fn call(stream: &UnixStream, request: &Request) -> anyhow::Result<Response> {
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let mut line = serde_json::to_string(request)?;
    line.push('\n');
    let mut writer = stream;
    writer.write_all(line.as_bytes())?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .context("reading the server's answer on the admin socket")?;
    anyhow::ensure!(
        !answer.is_empty(),
        "the server closed the admin socket without answering"
    );
    serde_json::from_str::<Reply>(&answer)
        .context("unreadable answer on the admin socket")?
        .map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    use super::*;
    use crate::data_dir::DataDir;

    #[tokio::test(flavor = "multi_thread")]
    async fn requests_cross_an_owner_only_socket_that_replaces_a_stale_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DataDir::open(tmp.path()).unwrap();
        // A stale socket of a killed server: a socket file nobody listens on.
        drop(std::os::unix::net::UnixListener::bind(path(tmp.path())).unwrap());
        assert!(connect(tmp.path()).is_none(), "a stale socket refuses");

        let bound = bind(tmp.path()).unwrap();
        let meta = fs::metadata(path(tmp.path())).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o777, 0o600);
        let leftovers: Vec<_> = fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".admin-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        let admin = Admin::open(dir.db(), crate::accounts::Plans::default()).unwrap();
        let server = serve(bound.listener().unwrap(), admin);
        let client = tokio::task::spawn_blocking({
            let data = tmp.path().to_path_buf();
            move || {
                let create = Request::CreateKey {
                    account: "acme".into(),
                    plan: None,
                };
                let created = call(&connect(&data).unwrap(), &create).unwrap();
                let bad = Request::SetPlan {
                    account: "nobody".into(),
                    plan: crate::accounts::Plan::Free,
                };
                let refused = call(&connect(&data).unwrap(), &bad).unwrap_err();
                (created, refused.to_string())
            }
        });
        let (created, refused) = tokio::select! {
            served = server => panic!("the server stopped: {served:?}"),
            answered = client => answered.unwrap(),
        };
        assert!(
            matches!(created, Response::KeyCreated { secret, .. } if secret.starts_with("wm_"))
        );
        assert!(refused.contains("nobody"), "{refused}");

        drop(bound);
        assert!(
            !path(tmp.path()).exists(),
            "the socket goes with the server"
        );
    }
}
