//! Where an operator command acts: the data dir (embedded backend), or the database the
//! configuration names (postgres) — the same `--config` `serve` takes.

use std::path::PathBuf;

use crate::{
    admin::{self, Request, Response},
    config::Config,
};

#[derive(clap::Args)]
pub(super) struct Target {
    /// Where the database and indexes live (the embedded backend).
    #[arg(long, env = "WASMIND_DATA_DIR", default_value = "./wasmind-data")]
    data_dir: PathBuf,
    /// TOML configuration file, as `serve` takes it; with `[storage] backend = "postgres"`
    /// the command acts on that database.
    #[arg(long, env = "WASMIND_CONFIG")]
    config: Option<PathBuf>,
}

impl Target {
    /// Runs `request` there.
    pub(super) fn run(&self, request: Request) -> anyhow::Result<Response> {
        admin::run(&self.data_dir, &self.config()?, request)
    }

    /// The configuration (file, then environment), as `serve` reads it.
    pub(super) fn config(&self) -> anyhow::Result<Config> {
        let env = std::env::vars().collect();
        Ok(Config::load(self.config.as_deref(), &env)?.0)
    }

    /// The data dir (the embedded backend's).
    pub(super) fn data_dir(&self) -> &std::path::Path {
        &self.data_dir
    }
}
