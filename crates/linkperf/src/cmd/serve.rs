//! `linkperf serve`: binds the responder and serves until killed.

use std::net::SocketAddr;
use std::process::ExitCode;

use linkperf_net::{Responder, ResponderConfig};
use linkperf_proto::Limits;

use crate::args::serve::ServeArgs;
use crate::args::target::read_key;

/// Runs the responder in the foreground.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Before any thread starts: every responder thread inherits it.
    if let Some(cpus) = &args.affinity {
        linkperf_net::placement::pin_current_thread(cpus)?;
    }
    if let Some(path) = &args.serial {
        return crate::cmd::echo::serve_serial(path, &args.line, args.quiet);
    }
    let line = &args.line;
    let line_settings = line.baud.is_some()
        || line.pack_length.is_some()
        || line.pack_idle.is_some()
        || line.pack_delimiter.is_some()
        || line.data_bits != 8
        || line.stop_bits != 1;
    if line_settings {
        return Err(crate::exit::UsageError(
            "--baud, --data-bits, --stop-bits and --pack-* set the serial line of `serve --serial PATH`: give the device"
                .into(),
        )
        .into());
    }
    let key = args.key_file.as_deref().map(read_key).transpose()?;
    let limits = Limits {
        max_sessions: args.max_sessions,
        max_duration: args.max_duration,
        max_message_bytes: args.max_size,
        max_udp_rate_bps: args.max_rate.0,
        allow_spin: args.allow_spin,
        ..Limits::default()
    };
    let config = ResponderConfig {
        bind: SocketAddr::new(args.bind, args.port),
        unix: args.unix.clone(),
        key: key.clone(),
        limits,
        log: !args.quiet,
        ..ResponderConfig::default()
    };
    let responder = Responder::bind(config)?;
    let address = responder.address()?;
    // Every thread of the responder is running before the line that says it listens: whoever waits for
    // that line (a script, a test sampling the responder's threads) finds it whole.
    let _handle = responder.spawn()?;
    if !args.quiet {
        let unix = args.unix.as_ref().map(|p| format!(" and unix {}", p.display())).unwrap_or_default();
        let auth = if key.is_some() { ", key required" } else { "" };
        let pinned = args.affinity.as_ref().map(|c| format!(", on CPUs {c}")).unwrap_or_default();
        eprintln!("linkperf serve: listening on {address} (tcp and udp){unix}{auth}{pinned}");
    }
    loop {
        std::thread::park();
    }
}
