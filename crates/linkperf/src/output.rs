//! Assembling the result of a run and writing it in the chosen format.

use std::io::Write;

use linkperf_core::run_result::{Endpoints, Parameters, Target, ThroughputSeries, ToolInfo};
use linkperf_core::terminal_text::Newlines;
use linkperf_core::{HostFacts, RunResult, RunStatus, Series, SCHEMA_VERSION};
use linkperf_net::run::MeasuredRun;
use linkperf_net::NetError;
use linkperf_report::Format;

use crate::cmd::endpoint::Endpoint;

/// What a driver measured, by kind of series.
#[derive(Default)]
pub struct Measured {
    /// The responder's facts.
    pub responder: HostFacts,
    /// This host's facts, with its interface, when the driver knew them.
    pub client: Option<HostFacts>,
    /// Latency or connect series.
    pub series: Vec<Series>,
    /// Throughput series.
    pub throughput: Vec<ThroughputSeries>,
    /// Zero-loss rates found by a rate search.
    pub rate_search: Vec<linkperf_core::rate_search::ZeroLossRate>,
    /// The longest whole bursts found by a burst search.
    pub bursts: Vec<linkperf_core::rate_search::BurstResult>,
    /// Cautions about the figures.
    pub warnings: Vec<String>,
}

impl Measured {
    /// The latency, connect or idle series of a driver's run, and what stopped it.
    pub fn series(run: MeasuredRun<Series>) -> (Self, Option<NetError>) {
        let measured = Self {
            responder: run.responder,
            client: run.client,
            series: run.series,
            warnings: run.warnings,
            ..Self::default()
        };
        (measured, run.error)
    }

    /// The throughput series of a driver's run, and what stopped it.
    pub fn throughput(run: MeasuredRun<ThroughputSeries>) -> (Self, Option<NetError>) {
        let measured = Self {
            responder: run.responder,
            client: run.client,
            throughput: run.series,
            warnings: run.warnings,
            ..Self::default()
        };
        (measured, run.error)
    }
}

/// Builds the result model of a run that measured `measured` and perhaps stopped with `error`.
pub fn build(
    parameters: Parameters,
    endpoint: &Endpoint,
    measured: Measured,
    error: Option<&NetError>,
    started_at: std::time::SystemTime,
) -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo { name: "linkperf".into(), version: env!("CARGO_PKG_VERSION").into() },
        command: std::env::args().collect(),
        started_at: humantime::format_rfc3339_seconds(started_at).to_string(),
        parameters,
        target: Target { host: endpoint.label.clone(), address: endpoint.target.describe() },
        endpoints: Endpoints {
            client: measured.client.unwrap_or_else(linkperf_net::host::local_host_facts),
            responder: measured.responder,
            echo: endpoint.echo.clone(),
            placement: endpoint.placement.clone(),
            sockets: socket_setup(&endpoint.target.options),
        },
        series: measured.series,
        throughput: measured.throughput,
        rate_search: measured.rate_search,
        bursts: measured.bursts,
        warnings: measured.warnings,
        status: match error {
            Some(e) => RunStatus::Partial { error: e.to_string() },
            None => RunStatus::Complete,
        },
    }
}

/// The client's socket options, as a run keeps them.
fn socket_setup(options: &linkperf_net::SocketOptions) -> linkperf_core::socket_setup::SocketSetup {
    linkperf_core::socket_setup::SocketSetup {
        bind: options.bind.map(|b| b.to_string()),
        device: options.device.clone(),
        tos: options.tos,
    }
}

/// Writes the result to stdout. Tables and CSV carry text from the responder and from imported files (host
/// names, error texts, commands): their control characters and escape sequences are shown as escapes.
/// JSON escapes them itself.
pub fn emit(run: &RunResult, format: Format) -> std::io::Result<()> {
    let mut rendered = Vec::new();
    format.reporter().render(run, &mut rendered)?;
    if format != Format::Json {
        rendered = safe_text(&rendered).into_bytes();
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(&rendered)?;
    out.flush()
}

/// Rendered output made safe for a terminal: its lines as they are, any control character, escape
/// sequence or hidden format character in them shown as an escape (`core::terminal_text`).
pub fn safe_text(rendered: &[u8]) -> String {
    let text = String::from_utf8_lossy(rendered);
    linkperf_core::terminal_text::escape(&text, Newlines::Keep).into_owned()
}

/// One value from elsewhere (a label, a host name) made safe to print on its line.
pub fn safe_value(text: &str) -> std::borrow::Cow<'_, str> {
    linkperf_core::terminal_text::escape(text, Newlines::Escape)
}

/// `--json-stream`: newline-delimited JSON on stdout, one object per event as it happens, the result
/// document last (docs/json-schema.md, "Streaming"). Each line is written whole under the stdout lock, so
/// events from several threads never interleave. A failed write (stdout closed) is remembered and ends the
/// stream; the run goes on and is kept.
#[derive(Debug, Default)]
pub struct EventStream {
    closed: std::sync::atomic::AtomicBool,
}

impl EventStream {
    /// A test phase starts (a direction, a size, a trial).
    pub fn phase(&self, label: &str) {
        self.line(&serde_json::json!({ "event": "phase", "label": label }));
    }

    /// An interval of a throughput phase was measured: `bps` is bits per second of payload at the receiver.
    pub fn interval(&self, what: &str, start_s: f64, end_s: f64, bps: f64) {
        self.line(&serde_json::json!({
            "event": "interval", "what": what, "start_s": start_s, "end_s": end_s, "bps": bps,
        }));
    }

    /// A series (latency, connect, idle) or a throughput row finished.
    pub fn measured(&self, item: &linkperf_net::observer::Measurement<'_>) {
        use linkperf_net::observer::Measurement;
        match item {
            Measurement::Series(series) => self.line(&serde_json::json!({ "event": "series", "series": series })),
            Measurement::Throughput(row) => {
                self.line(&serde_json::json!({ "event": "throughput", "series": row }));
            }
        }
    }

    /// A message the run announced (what it will do, a warning).
    pub fn note(&self, message: &str) {
        self.line(&serde_json::json!({ "event": "note", "message": message }));
    }

    /// The result document, the stream's last line.
    pub fn result(&self, run: &RunResult) -> std::io::Result<()> {
        let line = serde_json::to_string(&serde_json::json!({ "event": "result", "result": run }))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()
    }

    fn line(&self, value: &serde_json::Value) {
        use std::sync::atomic::Ordering;
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{value}").and_then(|()| out.flush()).is_err() {
            self.closed.store(true, Ordering::Relaxed);
        }
    }
}
