//! The schema, as numbered migrations. Migration *n* takes a database from version *n - 1* to *n*; the
//! version is SQLite's `user_version`. Never edit a migration that has shipped: add the next one. Each
//! table is described in docs/store.md.

use rusqlite::Connection;

/// The migrations, in order: version 1 is the first.
const MIGRATIONS: &[&str] = &[
    // 1: runs, their labels and their series.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        test TEXT NOT NULL,
        proto TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        command TEXT NOT NULL,
        target_host TEXT NOT NULL,
        target_address TEXT NOT NULL,
        client_host TEXT NOT NULL,
        responder_host TEXT NOT NULL,
        parameters TEXT NOT NULL,
        endpoints TEXT NOT NULL,
        state TEXT NOT NULL,
        error TEXT,
        warnings TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE labels (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        label TEXT NOT NULL,
        PRIMARY KEY (run_id, label)
    );
    CREATE TABLE series (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        position INTEGER NOT NULL,
        size_bytes INTEGER,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, kind, position)
    );
    CREATE INDEX runs_by_start ON runs(started_at);",
    // 2: when a run ended, and the results of searches (rate searches, bursts) beside the series.
    "ALTER TABLE runs ADD COLUMN finished_at TEXT;
    ALTER TABLE runs ADD COLUMN outcomes TEXT NOT NULL DEFAULT '{}';
    CREATE INDEX labels_by_label ON labels(label);",
    // 3: the intervals a long test reports while it runs, kept until the run's end is written.
    "CREATE TABLE live_intervals (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        what TEXT NOT NULL,
        start_s REAL NOT NULL,
        end_s REAL NOT NULL,
        bps REAL NOT NULL
    );",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The database's schema version (0: empty).
pub fn version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Applies the migrations after the database's version, up to `target`, each in its own transaction. The
/// version is read inside each write transaction, so that two processes opening a new database at once
/// cannot both apply the same migration.
pub fn migrate_to(connection: &mut Connection, target: i64) -> rusqlite::Result<()> {
    loop {
        let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let current = version(&transaction)?;
        if current >= target {
            return Ok(());
        }
        transaction.execute_batch(MIGRATIONS[current.max(0) as usize])?;
        transaction.pragma_update(None, "user_version", current + 1)?;
        transaction.commit()?;
    }
}
