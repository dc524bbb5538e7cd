//! Operator actions on a data dir — keys, accounts and plans, usage — as one typed
//! [`Request`] → [`Response`] exchange, so the CLI does the same thing whether or not a
//! server holds the data dir. With a server running, the CLI sends the request over the
//! data dir's admin socket ([`socket`]) and the server runs it on its own open database, so
//! the change is live at once; with none, the CLI opens the files itself. Either way the
//! work is [`Admin::execute`]: one implementation, two transports.
//!
//! On the postgres backend there is no data dir to share: the CLI runs the request on the
//! database itself, where every node sees the change at once.
//!
//! Nothing here knows HTTP; the socket is local and owner-only, so it needs no secret.

mod ops;
pub mod socket;

pub use ops::{Admin, LiveCounts, Request, Response, UsageRow};

use std::path::Path;

use crate::{
    config::Config,
    data_dir::DataDir,
    storage::{self, Backend},
};

/// Runs `request` where `config` keeps the state. On the embedded backend that is the data
/// dir at `data_dir`: through the running server's admin socket when one answers, else on
/// the files (which takes the data dir's lock, as the server does); a socket file left by a
/// killed server refuses connections, so it leads to the files too. On postgres it is the
/// database.
pub fn run(data_dir: &Path, config: &Config, request: Request) -> anyhow::Result<Response> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match config.storage.backend {
        Backend::Postgres => runtime.block_on(async {
            let pool = storage::connect(&config.storage).await?;
            Admin::postgres(pool, config.plans.clone())
                .execute(request)
                .await
        }),
        Backend::Embedded => match socket::connect(data_dir) {
            Some(stream) => socket::call(&stream, &request),
            None => {
                let dir = DataDir::open(data_dir)?;
                runtime.block_on(Admin::open(dir.db(), config.plans.clone())?.execute(request))
            }
        },
    }
}
