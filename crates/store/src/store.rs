//! `Store`: opening the database, writing a run as it is measured, and reading runs back.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use linkperf_core::run_result::{Endpoints, Target, ThroughputSeries, ToolInfo};
use linkperf_core::{RunResult, RunStatus, Series};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::migration::{self, SCHEMA_VERSION};
use crate::{RunId, StoreError};

/// How long SQLite itself waits for another connection's transaction before a statement returns "busy".
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a write keeps trying, in all, while other writers hold the database. SQLite's own wait polls
/// without order, so under hundreds of writers one can lose every round of it; [`retry`] starts again with
/// pauses of its own. A run's writes happen off the measuring thread, so patience costs no measurement.
const WRITE_PATIENCE: Duration = Duration::from_secs(120);
/// What a run still marked `running` when read back is taken to be: nobody finished it.
const UNFINISHED: &str = "the run stopped without finishing (its process was killed or crashed, or it is still running); the series stored before that are kept";

/// The results database.
pub struct Store {
    connection: Connection,
    path: PathBuf,
}

/// A run read back from the database.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// Its number.
    pub id: RunId,
    /// Its labels.
    pub labels: Vec<String>,
    /// The result, as it was printed (or, for a run that never finished, what was stored of it).
    pub result: RunResult,
}

/// The results of searches, stored beside the series.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Outcomes {
    #[serde(default)]
    rate_search: Vec<linkperf_core::rate_search::ZeroLossRate>,
    #[serde(default)]
    bursts: Vec<linkperf_core::rate_search::BurstResult>,
}

impl Store {
    /// Opens (creating it and its directory if needed) the database at `path`, and migrates it to this
    /// build's schema. Only a due migration takes the write lock: opening a current database writes nothing.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::open_at(path, SCHEMA_VERSION)
    }

    /// Opens the database and migrates it to schema `version` only (for tests of migrations).
    pub fn open_at(path: &Path, version: i64) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory { path: shown.clone(), source })?;
        }
        let sqlite = |source| StoreError::Sqlite { path: shown.clone(), source };
        let mut connection = retry(|| Connection::open(path)).map_err(sqlite)?;
        // SQLite opens a file it may not write read-only, silently; a test must not find that out only
        // when its result is to be kept.
        if connection.is_readonly(rusqlite::MAIN_DB).map_err(sqlite)? {
            return Err(StoreError::ReadOnly { path: shown });
        }
        connection.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
        retry(|| set_wal(&connection)).map_err(sqlite)?;
        connection.pragma_update(None, "foreign_keys", true).map_err(sqlite)?;
        let found = retry(|| migration::version(&connection)).map_err(sqlite)?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew { path: shown, found, supported: SCHEMA_VERSION });
        }
        if found < version {
            retry(|| migration::migrate_to(&mut connection, version)).map_err(sqlite)?;
        }
        Ok(Self { connection, path: path.to_path_buf() })
    }

    /// Opens an existing database to read it, writing nothing: a database whose file or directory is
    /// read-only can still be listed and shown. A database of an older schema is migrated first if it can
    /// be written, and refused with the reason if not.
    pub fn open_for_reading(path: &Path) -> Result<Self, StoreError> {
        let store = Self::open_read_only(path)?;
        let found = store.schema_version()?;
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew { path: path.display().to_string(), found, supported: SCHEMA_VERSION });
        }
        if found == SCHEMA_VERSION {
            return Ok(store);
        }
        drop(store);
        Self::open(path).map_err(|error| match error {
            StoreError::ReadOnly { .. } => {
                StoreError::ReadOnlyOld { path: path.display().to_string(), found, supported: SCHEMA_VERSION }
            }
            StoreError::Sqlite { source, .. } if is_read_only(&source) => {
                StoreError::ReadOnlyOld { path: path.display().to_string(), found, supported: SCHEMA_VERSION }
            }
            other => other,
        })
    }

    /// Opens the database read-only. SQLite reads a database in write-ahead-log mode through its `-shm`
    /// file; where that cannot be created (a read-only directory after the last writer left), the file is
    /// opened as immutable, which is safe exactly because nobody can write it.
    fn open_read_only(path: &Path) -> Result<Self, StoreError> {
        let shown = path.display().to_string();
        let sqlite = |source| StoreError::Sqlite { path: shown.clone(), source };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = retry(|| Connection::open_with_flags(path, flags)).map_err(sqlite)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
        match retry(|| readable(&connection)) {
            Ok(()) => return Ok(Self { connection, path: path.to_path_buf() }),
            Err(e) if !cannot_open(&e) => return Err(sqlite(e)),
            Err(_) => {}
        }
        let uri = format!("file:{}?immutable=1", uri_path(path));
        let connection = Connection::open_with_flags(uri, flags).map_err(sqlite)?;
        readable(&connection).map_err(sqlite)?;
        Ok(Self { connection, path: path.to_path_buf() })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        migration::version(&self.connection).map_err(|e| self.error(e))
    }

    fn error(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.path.display().to_string(), source }
    }

    /// Records the start of a run: everything but its series, in state `running`.
    pub fn begin(&mut self, run: &RunResult, labels: &[String]) -> Result<RunId, StoreError> {
        self.write(|transaction| insert_run(transaction, run, "running", labels))
    }

    /// Stores one finished latency (or connect, idle) series of a running run.
    pub fn add_series(&mut self, id: RunId, series: &Series) -> Result<(), StoreError> {
        let body = json(series);
        self.write(|transaction| append(transaction, id, "latency", series.size_bytes, &body))
    }

    /// Stores one finished throughput row of a running run.
    pub fn add_throughput(&mut self, id: RunId, series: &ThroughputSeries) -> Result<(), StoreError> {
        let body = json(series);
        self.write(|transaction| append(transaction, id, "throughput", Some(series.size_bytes), &body))
    }

    /// Stores an interval a running test reported as it ended (`what` names it, e.g. `upload, read by the
    /// responder`), so that a run killed part-way still shows its rate until then.
    pub fn add_interval(
        &mut self,
        id: RunId,
        what: &str,
        (start_s, end_s): (f64, f64),
        bps: f64,
    ) -> Result<(), StoreError> {
        self.write(|transaction| {
            transaction
                .execute(
                    "INSERT INTO live_intervals (run_id, what, start_s, end_s, bps) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, what, start_s, end_s, bps],
                )
                .map(|_| ())
        })
    }

    /// Records the end of a run, in one transaction: its final series replace those stored along the way.
    pub fn finish(&mut self, id: RunId, run: &RunResult) -> Result<(), StoreError> {
        self.write(|transaction| finish_run(transaction, id, run))
    }

    /// Stores a whole run at once (an import, or a run whose start could not be written), in one
    /// transaction.
    pub fn insert(&mut self, run: &RunResult, labels: &[String]) -> Result<RunId, StoreError> {
        self.write(|transaction| {
            let id = insert_run(transaction, run, "running", labels)?;
            finish_run(transaction, id, run)?;
            Ok(id)
        })
    }

    /// Runs `work` in a write transaction taken at once (`BEGIN IMMEDIATE`, so that it never has to upgrade
    /// a read lock, which SQLite refuses without waiting), and starts it again while other writers hold the
    /// database: beyond SQLite's own wait, with growing, jittered pauses, for up to [`WRITE_PATIENCE`].
    fn write<T>(&mut self, mut work: impl FnMut(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let connection = &mut self.connection;
        retry(|| {
            let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let value = work(&transaction)?;
            transaction.commit()?;
            Ok(value)
        })
        .map_err(|e| sqlite(&self.path, e))
    }

    /// Reads run `id` back.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let row = self
            .connection
            .query_row(
                "SELECT started_at, tool_version, schema_version, command, target_host, target_address,
                        parameters, endpoints, state, error, warnings, outcomes
                 FROM runs WHERE id = ?1",
                [id],
                RunRow::read,
            )
            .optional()
            .map_err(|e| self.error(e))?
            .ok_or(StoreError::NoSuchRun(id))?;
        let outcomes: Outcomes = parse(id, "outcomes", &row.outcomes)?;
        let (series, throughput) = self.series_of(id)?;
        let status = match row.state.as_str() {
            "complete" => RunStatus::Complete,
            "running" => RunStatus::Partial { error: UNFINISHED.into() },
            "failed" => RunStatus::Failed { error: row.error.unwrap_or_default() },
            _ => RunStatus::Partial { error: row.error.unwrap_or_default() },
        };
        let mut warnings: Vec<String> = parse(id, "warnings", &row.warnings)?;
        if row.state == "running" {
            warnings.extend(self.live_summary(id)?);
        }
        let result = RunResult {
            schema_version: row.schema_version,
            tool: ToolInfo { name: "linkperf".into(), version: row.tool_version },
            command: parse(id, "command", &row.command)?,
            started_at: row.started_at,
            parameters: parse(id, "parameters", &row.parameters)?,
            target: Target { host: row.target_host, address: row.target_address },
            endpoints: parse::<Endpoints>(id, "endpoints", &row.endpoints)?,
            series,
            throughput,
            rate_search: outcomes.rate_search,
            bursts: outcomes.bursts,
            warnings,
            status,
        };
        Ok(StoredRun { id, labels: self.labels_of(id)?, result })
    }

    fn series_of(&self, id: RunId) -> Result<(Vec<Series>, Vec<ThroughputSeries>), StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT kind, body FROM series WHERE run_id = ?1 ORDER BY kind, position")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map([id], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
            .map_err(|e| self.error(e))?;
        let (mut series, mut throughput) = (Vec::new(), Vec::new());
        for row in rows {
            let (kind, body) = row.map_err(|e| self.error(e))?;
            match kind.as_str() {
                "throughput" => throughput.push(parse(id, "throughput series", &body)?),
                _ => series.push(parse(id, "series", &body)?),
            }
        }
        Ok((series, throughput))
    }

    /// For a run that never finished: a line per kind of live interval it reported, with their span and
    /// goodput (the intervals themselves are not part of its result).
    fn live_summary(&self, id: RunId) -> Result<Vec<String>, StoreError> {
        let mut statement = self
            .connection
            .prepare(
                "SELECT what, COUNT(*), MIN(start_s), MAX(end_s), SUM(bps * (end_s - start_s)) / SUM(end_s - start_s),
                        MIN(bps), MAX(bps)
                 FROM live_intervals WHERE run_id = ?1 GROUP BY what ORDER BY MIN(rowid)",
            )
            .map_err(|e| self.error(e))?;
        let lines = statement
            .query_map([id], |row| {
                Ok(format!(
                    "never finished: {} intervals of the {} were kept as they ended, {:.2} - {:.2} s: {:.2} Mbit/s over them (intervals from {:.2} to {:.2} Mbit/s)",
                    row.get::<_, i64>(1)?,
                    row.get::<_, String>(0)?,
                    row.get::<_, f64>(2)?,
                    row.get::<_, f64>(3)?,
                    row.get::<_, f64>(4)? / 1e6,
                    row.get::<_, f64>(5)? / 1e6,
                    row.get::<_, f64>(6)? / 1e6
                ))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.error(e))?;
        Ok(lines)
    }

    pub(crate) fn labels_of(&self, id: RunId) -> Result<Vec<String>, StoreError> {
        let mut statement = self
            .connection
            .prepare("SELECT label FROM labels WHERE run_id = ?1 ORDER BY label")
            .map_err(|e| self.error(e))?;
        let labels = statement
            .query_map([id], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.error(e))?;
        Ok(labels)
    }

    pub(crate) fn connection(&self) -> &Connection {
        &self.connection
    }
}

/// The columns of a run's row.
struct RunRow {
    started_at: String,
    tool_version: String,
    schema_version: u32,
    command: String,
    target_host: String,
    target_address: String,
    parameters: String,
    endpoints: String,
    state: String,
    error: Option<String>,
    warnings: String,
    outcomes: String,
}

impl RunRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            started_at: row.get(0)?,
            tool_version: row.get(1)?,
            schema_version: row.get(2)?,
            command: row.get(3)?,
            target_host: row.get(4)?,
            target_address: row.get(5)?,
            parameters: row.get(6)?,
            endpoints: row.get(7)?,
            state: row.get(8)?,
            error: row.get(9)?,
            warnings: row.get(10)?,
            outcomes: row.get(11)?,
        })
    }
}

/// Switches the database to write-ahead logging, once. Changing the journal mode needs a moment alone with
/// the file and, unlike other statements, does not wait for other connections; so the mode is read first
/// (a database in WAL mode stays so), and the caller retries the switch while others hold the file.
fn set_wal(connection: &Connection) -> rusqlite::Result<()> {
    let mode: String = connection.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0))?;
    }
    Ok(())
}

/// Runs `attempt` again while the database is busy or locked by other connections, with pauses that grow
/// from 5 ms to 250 ms, each shortened at random (so that waiting writers do not wake in step), for up to
/// [`WRITE_PATIENCE`] in all.
fn retry<T>(mut attempt: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + WRITE_PATIENCE;
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt() {
            Err(e) if is_busy(&e) && Instant::now() < deadline => {
                std::thread::sleep(pause.mul_f64(0.5 + 0.5 * random_fraction()));
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            other => return other,
        }
    }
}

/// Whether SQLite refused because another connection holds the database.
fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(e, _)
        if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// Whether SQLite refused to write because the file or its directory is read-only.
fn is_read_only(error: &rusqlite::Error) -> bool {
    matches!(error, rusqlite::Error::SqliteFailure(e, _)
        if matches!(e.code, rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen))
}

/// Whether a read-only connection could not set up its access to the write-ahead log.
fn cannot_open(error: &rusqlite::Error) -> bool {
    is_read_only(error)
}

/// Reads the schema version and the runs table: what every reading command needs to work.
fn readable(connection: &Connection) -> rusqlite::Result<()> {
    migration::version(connection)?;
    connection.query_row("SELECT COUNT(*) FROM sqlite_master", [], |row| row.get::<_, i64>(0))?;
    Ok(())
}

/// A file path as the path part of an SQLite URI (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let text = path.display().to_string();
    text.replace('%', "%25").replace('?', "%3f").replace('#', "%23")
}

/// A number in [0, 1) that differs between calls and processes (the standard library's random hash keys).
fn random_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let bits = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite { path: path.display().to_string(), source }
}

fn parse<T: serde::de::DeserializeOwned>(id: RunId, what: &'static str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Corrupt { id, what, source })
}

/// The JSON of a value of the result model (which always serialises).
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

fn state_of(status: &RunStatus) -> (&'static str, Option<&str>) {
    match status {
        RunStatus::Complete => ("complete", None),
        RunStatus::Partial { error } => ("partial", Some(error.as_str())),
        RunStatus::Failed { error } => ("failed", Some(error.as_str())),
    }
}

fn insert_run(connection: &Connection, run: &RunResult, state: &str, labels: &[String]) -> rusqlite::Result<RunId> {
    connection.execute(
        "INSERT INTO runs (started_at, test, proto, tool_version, schema_version, command, target_host,
            target_address, client_host, responder_host, parameters, endpoints, state, error, warnings)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, NULL, ?14)",
        params![
            run.started_at,
            run.parameters.test_name(),
            run.parameters.proto().name(),
            run.tool.version,
            run.schema_version,
            json(&run.command),
            run.target.host,
            run.target.address,
            run.endpoints.client.hostname,
            run.endpoints.responder.hostname,
            json(&run.parameters),
            json(&run.endpoints),
            state,
            json(&run.warnings),
        ],
    )?;
    let id = connection.last_insert_rowid();
    for label in labels {
        connection.execute("INSERT OR IGNORE INTO labels (run_id, label) VALUES (?1, ?2)", params![id, label])?;
    }
    Ok(id)
}

/// Writes a run's end: its state, error, warnings, endpoints and outcomes, and its final series in place of
/// those stored along the way.
fn finish_run(connection: &Connection, id: RunId, run: &RunResult) -> rusqlite::Result<()> {
    let (state, error) = state_of(&run.status);
    connection.execute(
        "UPDATE runs SET state = ?2, error = ?3, warnings = ?4, endpoints = ?5, responder_host = ?6,
         outcomes = ?7, finished_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?1",
        params![
            id,
            state,
            error,
            json(&run.warnings),
            json(&run.endpoints),
            run.endpoints.responder.hostname,
            json(&Outcomes { rate_search: run.rate_search.clone(), bursts: run.bursts.clone() })
        ],
    )?;
    connection.execute("DELETE FROM series WHERE run_id = ?1", [id])?;
    // The final series hold every interval; the live ones only stand in for a run that never ends.
    connection.execute("DELETE FROM live_intervals WHERE run_id = ?1", [id])?;
    insert_series(connection, id, run)
}

fn insert_series(connection: &Connection, id: RunId, run: &RunResult) -> rusqlite::Result<()> {
    for (position, series) in run.series.iter().enumerate() {
        insert_one(connection, id, ("latency", position as i64), series.size_bytes, &json(series))?;
    }
    for (position, series) in run.throughput.iter().enumerate() {
        insert_one(connection, id, ("throughput", position as i64), Some(series.size_bytes), &json(series))?;
    }
    Ok(())
}

/// Appends a series after those of its kind already stored for the run.
fn append(connection: &Connection, id: RunId, kind: &str, size: Option<u64>, body: &str) -> rusqlite::Result<()> {
    let next: i64 = connection.query_row(
        "SELECT COALESCE(MAX(position) + 1, 0) FROM series WHERE run_id = ?1 AND kind = ?2",
        params![id, kind],
        |row| row.get(0),
    )?;
    insert_one(connection, id, (kind, next), size, body)
}

fn insert_one(
    connection: &Connection,
    id: RunId,
    (kind, position): (&str, i64),
    size: Option<u64>,
    body: &str,
) -> rusqlite::Result<()> {
    connection.execute(
        "INSERT INTO series (run_id, kind, position, size_bytes, body) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, kind, position, size.map(|s| s as i64), body],
    )?;
    Ok(())
}
