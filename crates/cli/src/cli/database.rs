//! `--database URL` (or `TOOLHOST_DATABASE_URL`): run journals in PostgreSQL instead of the
//! state directory (`toolhost_app::database`).

/// Where the journals are: `--database URL`, else `TOOLHOST_DATABASE_URL`.
#[derive(Debug, clap::Args)]
pub(crate) struct DatabaseArg {
    /// Journals in the PostgreSQL database at URL (postgres://USER@HOST:PORT/DATABASE)
    /// instead of the state directory [env: TOOLHOST_DATABASE_URL]
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl DatabaseArg {
    /// The `--database` flag's value, if given (not the environment's).
    pub(crate) fn given(&self) -> Option<String> {
        self.database.clone()
    }

    /// The database URL given, if any.
    pub(crate) fn url(&self) -> Option<String> {
        toolhost_app::database::url(self.database.clone())
    }
}
