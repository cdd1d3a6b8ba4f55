//! Command-line arguments, one file per subcommand, plus the groups and value parsers they share. Each
//! subcommand's arguments convert into a validated spec from `linkperf-core` (parse, don't validate).

pub mod connect;
pub mod latency;
pub mod output;
pub mod serve;
pub mod target;
pub mod throughput;
pub mod value;
