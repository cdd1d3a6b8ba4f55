//! `EchoSetup`: how a test against an echo was set up, kept with its result (`endpoints.echo` in the JSON,
//! docs/json-schema.md): what closed the loop, how many ports ran at once, the serial line's settings and
//! the timeouts. These are the rows of study 3's parameter table that the test's own parameters (protocol,
//! iterations, data size) do not hold; tables print them and `compare` heads each run with them.

use serde::{Deserialize, Serialize};

use crate::serial_line::{FlowControl, LineSettings, Packing};

/// What sent the bytes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EchoPeer {
    /// A serial device looped back by a plug, or by `linkperf serve --serial` at the line's far end.
    SerialDevice,
    /// An echo service over TCP or UDP (RFC 862, a device server in TCP-server mode with a loopback plug).
    EchoService,
}

/// The set-up of a test against an echo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EchoSetup {
    /// What sent the bytes back.
    pub peer: EchoPeer,
    /// Devices or echo services run at once (study 3's ports loaded together).
    pub ports: u32,
    /// The serial line: the device's settings, applied and read back; or, behind an echo service, the
    /// settings given with `--baud` (set on the device server out of band).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<LineSettings>,
    /// The longest silence allowed between two bytes of one echoed message (`--char-timeout`), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter_character_timeout_s: Option<f64>,
    /// How long a message may take to come back (latency, idle); how long the echo may fall silent once
    /// the sender has stopped (throughput); seconds.
    pub timeout_s: f64,
    /// Throughput: the most bytes in flight per port (sent and not yet back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_bytes: Option<u64>,
    /// When the far end forwards what it gathers (a device server's packing, as given; `serve --serial`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packing: Option<Packing>,
    /// The run length announced before the run, in seconds, when the line's rate allowed an estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_s: Option<f64>,
}

impl EchoSetup {
    /// One line for people: `serial device, 1 port, 9600 8N1 (10 bits/character), flow none,
    /// inter-character timeout 5 ms, timeout 2 s`.
    pub fn describe(&self) -> String {
        let peer = match self.peer {
            EchoPeer::SerialDevice => "serial device looped back",
            EchoPeer::EchoService => "echo service",
        };
        let ports = if self.ports == 1 { "1 port".to_string() } else { format!("{} ports at once", self.ports) };
        let mut parts = vec![peer.to_string(), ports];
        if let Some(line) = &self.line {
            let behind = if self.peer == EchoPeer::EchoService { "serial line behind it " } else { "" };
            parts.push(format!("{behind}{} ({} bits/character)", line.short(), line.bits_per_character()));
            parts.push(format!("flow control {}", flow_name(line.flow)));
        }
        if let Some(packing) = &self.packing {
            parts.push(format!("far end's packing: {}", packing.describe()));
        }
        let char_timeout = self.inter_character_timeout_s.map_or("none".to_string(), seconds);
        parts.push(format!("inter-character timeout {char_timeout}"));
        parts.push(format!("timeout {}", seconds(self.timeout_s)));
        if let Some(window) = self.window_bytes {
            parts.push(format!("at most {window} B in flight per port"));
        }
        parts.join(", ")
    }
}

/// A flow control as typed on the command line.
pub fn flow_name(flow: FlowControl) -> &'static str {
    match flow {
        FlowControl::None => "none",
        FlowControl::RtsCts => "rtscts",
        FlowControl::XonXoff => "xonxoff",
    }
}

/// Seconds for people: `5 ms`, `2 s`, `1.5 s`.
fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", crate::units::format_significant(s * 1000.0))
    } else {
        format!("{} s", crate::units::format_significant(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serial_line::Parity;

    #[test]
    fn a_setup_reads_as_study_threes_parameter_table() {
        let line =
            LineSettings { baud: 9600, data_bits: 7, parity: Parity::Even, stop_bits: 1, flow: FlowControl::RtsCts };
        let setup = EchoSetup {
            peer: EchoPeer::SerialDevice,
            ports: 4,
            line: Some(line),
            inter_character_timeout_s: Some(0.005),
            timeout_s: 2.0,
            window_bytes: Some(240),
            packing: Some(Packing { idle_s: Some(0.005), ..Packing::default() }),
            expected_s: Some(12.5),
        };
        assert_eq!(
            setup.describe(),
            "serial device looped back, 4 ports at once, 9600 7E1 (10 bits/character), flow control rtscts, \
             far end's packing: forward after 5 ms quiet, inter-character timeout 5 ms, timeout 2 s, at most 240 B \
             in flight per port"
        );
        let json = serde_json::to_value(&setup).unwrap();
        assert_eq!(json["line"]["parity"], "even");
        assert_eq!(json["peer"], "serial_device");
        let back: EchoSetup = serde_json::from_value(json).unwrap();
        assert_eq!(back, setup);
    }
}
