//! Listing runs: `RunFilter` (what `linkperf runs` selects by) and `RunSummary` (a line per run).

use rusqlite::params_from_iter;

use crate::{RunId, Store, StoreError};

/// Which runs to list; every field that is set must match.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Runs carrying this label.
    pub label: Option<String>,
    /// Runs whose target, client or responder host name contains this text.
    pub host: Option<String>,
    /// Runs of this test (`latency`, `throughput`, ...).
    pub test: Option<String>,
    /// Runs started at or after this RFC 3339 time (UTC, e.g. `2026-11-01T00:00:00Z`).
    pub since: Option<String>,
    /// At most this many, the newest first.
    pub limit: Option<u32>,
}

/// One run, as `linkperf runs` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunSummary {
    /// Its number.
    pub id: RunId,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// The test.
    pub test: String,
    /// The transport.
    pub proto: String,
    /// What the user named as the target.
    pub target: String,
    /// The responder's host name.
    pub responder_host: String,
    /// `complete`, `partial`, or `running` (never finished).
    pub state: String,
    /// Its labels.
    pub labels: Vec<String>,
    /// Series stored (latency and throughput rows together).
    pub series: u32,
}

impl Store {
    /// The runs that match `filter`, the newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut conditions = Vec::new();
        let mut values: Vec<String> = Vec::new();
        if let Some(label) = &filter.label {
            conditions.push("EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id AND l.label = ?)");
            values.push(label.clone());
        }
        if let Some(host) = &filter.host {
            conditions.push("(instr(target_host, ?) > 0 OR instr(client_host, ?) > 0 OR instr(responder_host, ?) > 0)");
            values.extend([host.clone(), host.clone(), host.clone()]);
        }
        if let Some(test) = &filter.test {
            conditions.push("test = ?");
            values.push(test.clone());
        }
        if let Some(since) = &filter.since {
            conditions.push("started_at >= ?");
            values.push(since.clone());
        }
        let mut sql = String::from(
            "SELECT id, started_at, test, proto, target_host, responder_host, state,
                    (SELECT COUNT(*) FROM series s WHERE s.run_id = runs.id)
             FROM runs",
        );
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        sql.push_str(" ORDER BY started_at DESC, id DESC");
        if let Some(limit) = filter.limit {
            sql.push_str(&format!(" LIMIT {limit}"));
        }
        let error = |e| StoreError::Sqlite { path: self.path().display().to_string(), source: e };
        let mut statement = self.connection().prepare(&sql).map_err(error)?;
        let rows = statement
            .query_map(params_from_iter(values.iter()), |row| {
                Ok(RunSummary {
                    id: row.get(0)?,
                    started_at: row.get(1)?,
                    test: row.get(2)?,
                    proto: row.get(3)?,
                    target: row.get(4)?,
                    responder_host: row.get(5)?,
                    state: row.get(6)?,
                    labels: Vec::new(),
                    series: row.get(7)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(error)?;
        rows.into_iter().map(|summary| Ok(RunSummary { labels: self.labels_of(summary.id)?, ..summary })).collect()
    }
}
