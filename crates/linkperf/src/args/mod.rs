//! Command-line arguments, one file per subcommand, plus the groups and value parsers they share. Each
//! subcommand's arguments convert into a validated spec from `linkperf-core` (parse, don't validate).

pub mod burst;
pub mod connect;
pub mod idle;
pub mod latency;
pub mod line;
pub mod link;
pub mod output;
pub mod ratesearch;
pub mod serve;
pub mod stored;
pub mod suite;
pub mod sweep;
pub mod target;
pub mod throughput;
pub mod trial;
pub mod value;

/// Parses `argv` (without the program name) as one subcommand's arguments, for unit tests.
#[cfg(test)]
pub fn parse<A: clap::Args>(argv: &[&str]) -> Result<A, String> {
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper<A: clap::Args> {
        #[command(flatten)]
        args: A,
    }
    Wrapper::<A>::try_parse_from(std::iter::once("linkperf").chain(argv.iter().copied()))
        .map(|w| w.args)
        .map_err(|e| e.to_string())
}
