//! The JSON rendering: the result model as is, in the schema of docs/json-schema.md.

use std::io::{self, Write};

use linkperf_core::RunResult;

use crate::Reporter;

/// Pretty-printed JSON, one document per run.
pub struct JsonReporter;

impl Reporter for JsonReporter {
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, run)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_the_result() {
        let run = linkperf_core::fixture::latency_run();
        let mut out = Vec::new();
        JsonReporter.render(&run, &mut out).expect("renders");
        let back: RunResult = serde_json::from_slice(&out).expect("parses");
        assert_eq!(back, run);
    }

    #[test]
    fn json_matches_snapshot() {
        let mut out = Vec::new();
        JsonReporter.render(&linkperf_core::fixture::latency_run(), &mut out).expect("renders");
        let mut value: serde_json::Value = serde_json::from_slice(&out).expect("parses");
        // The encoded histograms are opaque bytes; the round-trip test above covers them.
        for series in value["series"].as_array_mut().into_iter().flatten() {
            series["histogram"] = "<hdr>".into();
        }
        insta::assert_json_snapshot!(value);
    }
}
