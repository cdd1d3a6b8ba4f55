//! A serial line's settings and its theoretical payload rate (docs/metrics.md, "Serial line rate").
//!
//! An asynchronous serial line sends each character as 1 start bit, the data bits, an optional parity bit
//! and 1 or 2 stop bits, at the baud rate in bits per second. A character carries `data_bits` bits of
//! payload, so the most payload a line can carry is `baud x data / (1 + data + parity + stop)` bit/s: 7680
//! bit/s at 9600 8N1 (960 characters/s), 6720 bit/s at 9600 7E1 (960 characters of 7 bits). This module
//! only computes; applying settings to a device is `linkperf-net`'s job.

use serde::{Deserialize, Serialize};

use crate::link_model::{Framing, LinkEfficiency};

/// The parity bit of each character.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Parity {
    /// No parity bit.
    None,
    /// An even-parity bit.
    Even,
    /// An odd-parity bit.
    Odd,
}

/// How the line paces the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowControl {
    /// None: the sender never waits.
    None,
    /// Hardware: the RTS and CTS lines.
    RtsCts,
    /// Software: XON and XOFF characters in the data (so they cannot be payload).
    XonXoff,
}

/// A serial line's character framing and rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSettings {
    /// Line rate in bits per second (every bit of a character, start and stop bits included).
    pub baud: u32,
    /// Data bits per character, 5 to 8.
    pub data_bits: u8,
    /// The parity bit.
    pub parity: Parity,
    /// Stop bits per character, 1 or 2.
    pub stop_bits: u8,
    /// Flow control.
    pub flow: FlowControl,
}

impl LineSettings {
    /// Bits on the line per character: 1 start + data + parity + stop.
    pub fn bits_per_character(&self) -> u32 {
        1 + u32::from(self.data_bits) + u32::from(self.parity != Parity::None) + u32::from(self.stop_bits)
    }

    /// Characters per second at the baud rate.
    pub fn characters_per_s(&self) -> f64 {
        f64::from(self.baud) / f64::from(self.bits_per_character())
    }

    /// The most payload the line can carry, in bit/s: every data bit of every character.
    pub fn max_payload_bps(&self) -> f64 {
        self.characters_per_s() * f64::from(self.data_bits)
    }

    /// Seconds one character takes on the line: its bits over the baud rate (1.0417 ms at 9600 8N1).
    pub fn character_s(&self) -> f64 {
        f64::from(self.bits_per_character()) / f64::from(self.baud)
    }

    /// Seconds `bytes` characters take on the line back to back.
    pub fn transfer_s(&self, bytes: u64) -> f64 {
        bytes as f64 * self.character_s()
    }

    /// Seconds for a message of `bytes` to cross the line and come back across it: its characters out,
    /// then back. What an echo that keeps the whole message before returning it (a device server's packing,
    /// a responder at the far end of the line) needs at the least; a loopback plug returns each character
    /// while the next goes out, in about half. The run lengths announced for a line are counted in these.
    pub fn round_trip_s(&self, bytes: u64) -> f64 {
        2.0 * self.transfer_s(bytes)
    }

    /// The mask of the bits a character carries (a 7-bit line drops the top bit of a byte).
    pub fn data_mask(&self) -> u8 {
        (((1u16) << self.data_bits) - 1) as u8
    }

    /// The short form, e.g. `9600 8N1`.
    pub fn short(&self) -> String {
        let parity = match self.parity {
            Parity::None => 'N',
            Parity::Even => 'E',
            Parity::Odd => 'O',
        };
        format!("{} {}{parity}{}", self.baud, self.data_bits, self.stop_bits)
    }

    /// `measured_bps` of payload against the line's maximum, with the computation in words and numbers. In
    /// the returned model, `payload_bytes` and `wire_bytes` hold *bits* per character (data bits and line
    /// bits), since a serial character is not a whole number of bytes.
    pub fn efficiency(&self, measured_bps: f64) -> LinkEfficiency {
        self.efficiency_of_lines(measured_bps, 1)
    }

    /// As [`LineSettings::efficiency`], for the sum over `lines` such lines run at once.
    pub fn efficiency_of_lines(&self, measured_bps: f64, lines: u32) -> LinkEfficiency {
        let max = self.max_payload_bps() * f64::from(lines.max(1));
        let count = if lines > 1 { format!("{lines} lines x ") } else { String::new() };
        let formula = format!(
            "{count}{} bit/s x {} data / (1 start + {} data + {} parity + {} stop) = {max:.1} bit/s of payload; measured {measured_bps:.1} bit/s",
            self.baud,
            self.data_bits,
            self.data_bits,
            u32::from(self.parity != Parity::None),
            self.stop_bits,
        );
        LinkEfficiency {
            framing: Framing { link_bps: f64::from(self.baud), mtu_bytes: 0, overhead_bytes: 0, ipv6: false },
            payload_bytes: u64::from(self.data_bits),
            wire_bytes: u64::from(self.bits_per_character()),
            max_goodput_bps: max,
            percent: measured_bps / max * 100.0,
            formula,
        }
    }
}

/// When the far end of a line forwards what it has gathered, as a device server's packing settings do:
/// once it holds `length` characters, once the line has been quiet for `idle_s` (a device server's
/// inter-character timeout, or force-transmit time), or on the `delimiter` byte (forwarded with it). With
/// none set, each read is forwarded at once. Applied by `serve --serial`; behind an echo service, the
/// device's own settings as the user gave them, for the record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Packing {
    /// Forward once this many characters are held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u32>,
    /// Forward once the line has been quiet this long, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_s: Option<f64>,
    /// Forward up to and including this byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<u8>,
}

impl Packing {
    /// Whether no rule is set (each read is forwarded at once).
    pub fn is_none(&self) -> bool {
        self.length.is_none() && self.idle_s.is_none() && self.delimiter.is_none()
    }

    /// How many of the `held` bytes to forward now; `quiet`: the line has been quiet for `idle_s`. Whatever
    /// the rules, `limit` bytes held are forwarded (a device server's buffer is not endless either).
    pub fn forward(&self, held: &[u8], quiet: bool, limit: usize) -> usize {
        if self.is_none() || (quiet && self.idle_s.is_some()) || held.len() >= limit {
            return held.len();
        }
        let by_delimiter = self.delimiter.and_then(|d| held.iter().rposition(|&b| b == d)).map_or(0, |i| i + 1);
        let by_length = self.length.map_or(0, |l| held.len() / l as usize * l as usize);
        by_delimiter.max(by_length)
    }

    /// For people: `forward after 8 characters, after 30 ms quiet, on 0x0d`.
    pub fn describe(&self) -> String {
        let mut rules = Vec::new();
        if let Some(length) = self.length {
            rules.push(format!("after {length} characters"));
        }
        if let Some(idle) = self.idle_s {
            rules.push(format!("after {} ms quiet", crate::units::format_significant(idle * 1000.0)));
        }
        if let Some(delimiter) = self.delimiter {
            rules.push(format!("on 0x{delimiter:02x}"));
        }
        match rules.is_empty() {
            true => "each read at once".into(),
            false => format!("forward {}", rules.join(", or ")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(baud: u32, data_bits: u8, parity: Parity, stop_bits: u8) -> LineSettings {
        LineSettings { baud, data_bits, parity, stop_bits, flow: FlowControl::None }
    }

    #[test]
    fn eight_n_one_costs_ten_bits_per_byte() {
        let l = line(9600, 8, Parity::None, 1);
        assert_eq!(l.bits_per_character(), 10);
        assert_eq!(l.max_payload_bps(), 7680.0);
        assert_eq!(l.data_mask(), 0xff);
        assert_eq!(l.short(), "9600 8N1");
    }

    #[test]
    fn seven_e_one_carries_seven_bits_in_ten() {
        let l = line(115_200, 7, Parity::Even, 1);
        assert_eq!(l.bits_per_character(), 10);
        assert_eq!(l.characters_per_s(), 11_520.0);
        assert_eq!(l.max_payload_bps(), 80_640.0);
        assert_eq!(l.data_mask(), 0x7f);
    }

    #[test]
    fn a_character_at_9600_8n1_takes_ten_bits_of_a_9600th_of_a_second() {
        let l = line(9600, 8, Parity::None, 1);
        assert!((l.character_s() - 10.0 / 9600.0).abs() < 1e-15);
        assert!((l.transfer_s(960) - 1.0).abs() < 1e-12);
        assert!((l.round_trip_s(1) - 20.0 / 9600.0).abs() < 1e-15);
    }

    #[test]
    fn packing_forwards_by_length_delimiter_or_quiet_as_a_device_server_does() {
        let none = Packing::default();
        assert_eq!(none.forward(b"abc", false, 4096), 3, "no rule: each read at once");
        let length = Packing { length: Some(4), ..Packing::default() };
        assert_eq!((length.forward(b"abc", false, 4096), length.forward(b"abcdefghi", false, 4096)), (0, 8));
        assert_eq!(length.forward(b"abc", true, 4096), 0, "quiet forwards only with an idle rule");
        let idle = Packing { length: Some(4), idle_s: Some(0.03), delimiter: None };
        assert_eq!((idle.forward(b"abc", false, 4096), idle.forward(b"abc", true, 4096)), (0, 3));
        let delimiter = Packing { delimiter: Some(b'\r'), ..Packing::default() };
        assert_eq!(delimiter.forward(b"ab\rcd\ref", false, 4096), 6);
        assert_eq!(delimiter.forward(b"abcdef", false, 4), 6, "a full buffer goes whatever the rules");
        assert_eq!(idle.describe(), "forward after 4 characters, or after 30 ms quiet");
        assert_eq!(delimiter.describe(), "forward on 0x0d");
    }

    #[test]
    fn parity_and_two_stop_bits_lengthen_a_character() {
        assert_eq!(line(300, 5, Parity::Odd, 2).bits_per_character(), 9);
        let e = line(9600, 8, Parity::Even, 2).efficiency(6981.8);
        assert_eq!(e.wire_bytes, 12);
        assert!((e.percent - 6981.8 / 6400.0 * 100.0).abs() < 1e-9);
        assert!(e.formula.starts_with("9600 bit/s x 8 data / (1 start + 8 data + 1 parity + 2 stop) = 6400.0 bit/s"));
        let four = line(9600, 8, Parity::None, 1).efficiency_of_lines(30_720.0, 4);
        assert_eq!((four.max_goodput_bps, four.percent), (30_720.0, 100.0));
        assert!(four.formula.starts_with("4 lines x 9600 bit/s"), "{}", four.formula);
    }
}
