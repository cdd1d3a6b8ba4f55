//! One module per subcommand: each wires validated arguments to a driver and the result to a renderer.

pub mod connect;
pub mod endpoint;
pub mod idle;
pub mod latency;
pub mod serve;
pub mod throughput;
