//! The results database: every run linkperf makes is kept in an embedded SQLite database, so that runs can
//! be listed, shown again, exported, compared and reported on later.
//!
//! A run is written as it is measured: its row when it starts (state `running`), each series when it is
//! complete, and the whole result in one transaction when it ends. A run killed part-way keeps the series
//! it had finished, and reads back as partial. The schema is versioned with numbered migrations
//! (`migration.rs`, documented in docs/store.md); a database from an older version migrates on open.
//!
//! This crate knows SQL and the result model; it renders nothing and opens no sockets.

mod migration;
mod query;
mod store;

pub use query::{RunFilter, RunSummary};
pub use store::{Store, StoredRun};

/// A run's number in the database.
pub type RunId = i64;

/// Why the database could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed (the file cannot be opened, is not a database, is locked too long, ...).
    #[error("results database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The directory of the database could not be created.
    #[error("cannot create the directory of the results database {path}: {source}")]
    Directory {
        /// The database file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The database was written by a newer linkperf.
    #[error("results database {path} has schema version {found}, newer than this linkperf's {supported}: use a newer linkperf, or another --db")]
    TooNew {
        /// The database file.
        path: String,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// The database is of an older schema and cannot be migrated, because it is read-only.
    #[error("results database {path} has schema version {found}, older than this linkperf's {supported}, and is read-only: open it once where it can be written (it is then migrated), or use an older linkperf")]
    ReadOnlyOld {
        /// The database file.
        path: String,
        /// Its schema version.
        found: i64,
        /// The version this build reads.
        supported: i64,
    },
    /// The database may be read but not written.
    #[error("results database {path} is read-only: runs cannot be kept in it (it can still be read: linkperf runs, show, export)")]
    ReadOnly {
        /// The database file.
        path: String,
    },
    /// The writer of a run stopped before the run's end reached it.
    #[error("the run's end never reached the results database's writer")]
    Abandoned,
    /// No run has this number.
    #[error("no run {0} in the results database (see `linkperf runs`)")]
    NoSuchRun(RunId),
    /// A stored document could not be decoded.
    #[error("run {id}: stored {what} cannot be read: {source}")]
    Corrupt {
        /// The run.
        id: RunId,
        /// Which part.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
}

/// Where the database lives unless `--db` says otherwise: `$LINKPERF_DB`, else
/// `$XDG_DATA_HOME/linkperf/results.db`, else `~/.local/share/linkperf/results.db`, else `linkperf.db` here.
pub fn default_path() -> std::path::PathBuf {
    use std::path::PathBuf;
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = env("LINKPERF_DB") {
        return path;
    }
    let data = env("XDG_DATA_HOME").or_else(|| env("HOME").map(|home| home.join(".local/share")));
    match data {
        Some(dir) => dir.join("linkperf").join("results.db"),
        None => PathBuf::from("linkperf.db"),
    }
}
