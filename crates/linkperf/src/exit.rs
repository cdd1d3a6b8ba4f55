//! Exit codes and the one place errors are printed.

use std::process::ExitCode;

/// The run completed.
pub const SUCCESS: u8 = 0;
/// The run failed (network, responder, I/O), possibly after printing partial results.
pub const FAILURE: u8 = 1;
/// The command line was wrong (clap also exits with 2).
pub const USAGE: u8 = 2;
/// The run completed, but a figure failed a user-set gate (`--fail-if`, `compare --fail-if-worse`).
pub const GATE: u8 = 3;

/// A failure that is the user's input rather than the run: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Prints `error: ...` with its causes on one line and returns the matching exit code.
pub fn report(error: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(error) {
        return ExitCode::from(SUCCESS);
    }
    eprintln!("error: {}", shown(error));
    // A request the drivers find impossible as asked (e.g. UDP to a Unix socket path) is the user's input.
    let invalid = matches!(error.downcast_ref::<linkperf_net::NetError>(), Some(linkperf_net::NetError::Invalid(_)));
    if invalid || error.downcast_ref::<UsageError>().is_some() {
        eprintln!("hint: see linkperf --help, or linkperf <command> --help");
        return ExitCode::from(USAGE);
    }
    if let Some(hint) = hint_for(error) {
        eprintln!("hint: {hint}");
    }
    ExitCode::from(FAILURE)
}

/// The error and its causes on one line, as `{:#}` joins them. An error may quote a responder or a file:
/// its text is shown, never acted on by the terminal, and a responder's text cannot start a line of its
/// own (only this program's hints may).
fn shown(error: &anyhow::Error) -> String {
    let causes: Vec<String> = error
        .chain()
        .map(|cause| match cause.downcast_ref::<linkperf_net::NetError>() {
            Some(_) => crate::output::safe_value(&cause.to_string()).into_owned(),
            None => crate::output::safe_text(cause.to_string().as_bytes()),
        })
        .collect();
    causes.join(": ")
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

fn hint_for(error: &anyhow::Error) -> Option<&'static str> {
    // An echo has no `linkperf serve` to start: its own hint says what to check.
    if let Some(problem) = error.chain().find_map(|e| e.downcast_ref::<crate::cmd::echo::hint::EchoProblem>()) {
        return Some(problem.hint());
    }
    let io_kind = error.chain().find_map(|e| e.downcast_ref::<std::io::Error>()).map(|e| e.kind());
    match io_kind {
        Some(std::io::ErrorKind::ConnectionRefused) => {
            Some("is `linkperf serve` running on that host and port? (omit HOST to test against a built-in responder)")
        }
        Some(std::io::ErrorKind::AddrInUse) => Some("another program uses that port: pick another with --port"),
        Some(std::io::ErrorKind::PermissionDenied) => {
            Some("ports below 1024 need privileges: pick another with --port")
        }
        _ => None,
    }
}
