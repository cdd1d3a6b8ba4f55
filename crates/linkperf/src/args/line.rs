//! Arguments for peers that only echo (`--peer echo`) and for serial lines (`--proto serial --device`),
//! shared by `latency`, `throughput` and `idle`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use linkperf_core::serial_line::{FlowControl, LineSettings, Packing, Parity};

use super::value;
use crate::exit::UsageError;

/// What answers at the other end, and the serial line's settings.
#[derive(Debug, Clone, Args)]
pub struct LineArgs {
    /// What answers: a linkperf responder, or any echo service that sends back what it gets (RFC 862 on
    /// port 7, a serial device server in TCP-server mode with a loopback plug). Against an echo no
    /// responder is needed; every byte that comes back is checked (docs/metrics.md, "Echo peers").
    #[arg(long, value_enum, default_value = "linkperf")]
    pub peer: PeerArg,
    /// Serial devices for --proto serial, e.g. /dev/ttyUSB0, each looped back by a plug (or a device that
    /// echoes); several (comma-separated) run at once, each its own series. Opened exclusively; their
    /// settings are restored on exit.
    #[arg(long, value_name = "PATH", value_delimiter = ',')]
    pub device: Vec<PathBuf>,
    #[command(flatten)]
    pub settings: LineSettingsArgs,
    /// Inter-character timeout: the longest silence allowed between two bytes of one echoed message before
    /// the rest of it counts as missing [default: only --timeout for the whole message].
    #[arg(long, value_name = "DURATION", value_parser = value::duration)]
    pub char_timeout: Option<Duration>,
}

/// A serial line's settings, as typed (also those of `serve --serial`).
#[derive(Debug, Clone, Args)]
pub struct LineSettingsArgs {
    /// Serial line rate in bit/s (a standard rate: 50 to 4000000) [default with --proto serial: 9600]. With
    /// --peer echo over TCP or UDP, the rate of the serial line behind a device server (set on the device):
    /// throughput is then also given as % of that line's rate, and the payload fits its data bits. On a
    /// line, sizes, counts and timeouts not given follow its rate, and the run length is announced first
    /// (docs/serial.md).
    #[arg(long)]
    pub baud: Option<u32>,
    /// Data bits per character.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(5..=8))]
    pub data_bits: u8,
    /// Parity bit.
    #[arg(long, value_enum, default_value = "none")]
    pub parity: ParityArg,
    /// Stop bits.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub stop_bits: u8,
    /// Flow control.
    #[arg(long, value_enum, default_value = "none")]
    pub flow: FlowArg,
    /// Packing of the line's far end: forward once this many characters are held. `serve --serial`
    /// applies it; with --peer echo or --proto serial it records the device server's (or far end's)
    /// setting with the run (docs/serial.md, "Parameters").
    #[arg(long, value_name = "CHARACTERS", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub pack_length: Option<u32>,
    /// Packing: forward once the line has been quiet this long (a device server's inter-character
    /// timeout, or force-transmit time), e.g. 20ms.
    #[arg(long, value_name = "DURATION", value_parser = value::duration)]
    pub pack_idle: Option<Duration>,
    /// Packing: forward up to and including this byte, e.g. 0x0d or 13.
    #[arg(long, value_name = "BYTE", value_parser = byte)]
    pub pack_delimiter: Option<u8>,
}

/// A byte as typed: decimal, or hexadecimal after `0x`.
fn byte(text: &str) -> Result<u8, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("'{text}' is not a byte: give 0 to 255, or 0x00 to 0xff"))
}

/// The line rate of a serial device when --baud is not given.
const DEFAULT_BAUD: u32 = 9600;

/// What answers at the other end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PeerArg {
    /// A linkperf responder (`linkperf serve`, or the built-in one).
    Linkperf,
    /// Any echo service or loopback plug.
    Echo,
}

/// Parity, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ParityArg {
    /// No parity bit.
    None,
    /// Even parity.
    Even,
    /// Odd parity.
    Odd,
}

/// Flow control, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FlowArg {
    /// None.
    None,
    /// Hardware (RTS/CTS).
    Rtscts,
    /// Software (XON/XOFF).
    Xonxoff,
}

impl LineSettingsArgs {
    /// The far end's packing, when any rule is given.
    pub fn packing(&self) -> Option<Packing> {
        let packing = Packing {
            length: self.pack_length,
            idle_s: self.pack_idle.map(|d| d.as_secs_f64()),
            delimiter: self.pack_delimiter,
        };
        (!packing.is_none()).then_some(packing)
    }

    /// The settings, at 9600 bit/s unless --baud says otherwise.
    pub fn serial(&self) -> LineSettings {
        self.at(self.baud.unwrap_or(DEFAULT_BAUD))
    }

    fn at(&self, baud: u32) -> LineSettings {
        LineSettings {
            baud,
            data_bits: self.data_bits,
            parity: match self.parity {
                ParityArg::None => Parity::None,
                ParityArg::Even => Parity::Even,
                ParityArg::Odd => Parity::Odd,
            },
            stop_bits: self.stop_bits,
            flow: match self.flow {
                FlowArg::None => FlowControl::None,
                FlowArg::Rtscts => FlowControl::RtsCts,
                FlowArg::Xonxoff => FlowControl::XonXoff,
            },
        }
    }
}

impl LineArgs {
    /// A serial device's settings (9600 bit/s unless --baud says otherwise).
    pub fn serial_settings(&self) -> LineSettings {
        self.settings.serial()
    }

    /// The serial line behind an echo service, when --baud gives its rate.
    pub fn line_behind_echo(&self) -> Option<LineSettings> {
        self.settings.baud.map(|baud| self.settings.at(baud))
    }

    /// Whether the test runs against an echo (a network echo service or a serial loopback) instead of a
    /// linkperf responder; a usage error when the serial options do not fit the transport.
    pub fn wants_echo(&self, serial: bool) -> Result<bool, UsageError> {
        match (serial, self.device.is_empty()) {
            (true, true) => Err(UsageError("--proto serial needs --device PATH (e.g. /dev/ttyUSB0)".into())),
            (false, false) => Err(UsageError("--device is for --proto serial".into())),
            (true, false) => Ok(true),
            (false, true) if self.peer == PeerArg::Linkperf && self.settings.baud.is_some() => Err(UsageError(
                "--baud describes a serial line: use it with --proto serial, or with --peer echo for the line behind a device server".into(),
            )),
            (false, true) => Ok(self.peer == PeerArg::Echo),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_typed_in_decimal_or_hex() {
        assert_eq!((byte("13"), byte("0x0d"), byte("0XFF")), (Ok(13), Ok(13), Ok(255)));
        assert!(byte("256").is_err() && byte("0x100").is_err() && byte("cr").is_err());
    }
}
