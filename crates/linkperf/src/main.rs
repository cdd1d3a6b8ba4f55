//! `linkperf`: the command-line front end. Parses arguments, wires the drivers to the renderers, shows
//! progress and maps failures to exit codes; it measures nothing itself.
//!
//! Exit codes: 0 success (also when stdout is closed early), 1 runtime failure, 2 usage error, 3 a user
//! threshold failed (reserved).

mod args;
mod cli;
mod cmd;
mod exit;
mod output;
mod progress;
mod record;
mod suite;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The network responder ends on Ctrl-C at once; everything else (a serial echo included, whose port
    // must get its settings back) stops cleanly on it.
    if !matches!(&cli.command, Command::Serve(args) if args.serial.is_none()) {
        progress::handle_interrupts();
    }
    let result = match cli.command {
        Command::Serve(args) => cmd::serve::run(args),
        Command::Latency(args) => cmd::latency::run(args),
        Command::Connect(args) => cmd::connect::run(args),
        Command::Throughput(args) => cmd::throughput::run(args),
        Command::Idle(args) => cmd::idle::run(args),
        Command::Sweep(args) => cmd::sweep::run(args),
        Command::Ratesearch(args) => cmd::ratesearch::run(args),
        Command::Burst(args) => cmd::burst::run(args),
        Command::Suite(args) => suite::run(args),
        Command::Runs(args) => cmd::stored::runs(args),
        Command::Show(args) => cmd::stored::show(args),
        Command::Export(args) => cmd::stored::export(args),
        Command::Import(args) => cmd::stored::import(args),
        Command::Compare(args) => cmd::stored::compare(args),
        Command::Report(args) => cmd::stored::report(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => exit::report(&error),
    }
}
