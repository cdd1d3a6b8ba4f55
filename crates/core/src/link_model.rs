//! The theoretical maximum goodput of a link for the framing in use, and a measured goodput as a
//! percentage of it (docs/metrics.md, "Link efficiency").
//!
//! Every packet on the link carries, beyond its IP packet, a fixed per-frame overhead: on Ethernet 38 bytes
//! (preamble and start delimiter 8, header 14, frame check sequence 4, inter-frame gap 12), and frames are
//! at least 64 bytes from header to FCS. TCP fills each packet to the MTU with `mss` payload bytes; a UDP
//! datagram larger than the MTU is carried in IP fragments.

use serde::{Deserialize, Serialize};

use crate::spec::Proto;

/// Per-frame bytes an Ethernet link adds to an IP packet: preamble and delimiter, header, FCS, gap.
pub const ETHERNET_OVERHEAD_BYTES: u64 = 8 + 14 + 4 + 12;
/// Smallest Ethernet frame from header to FCS; shorter ones are padded.
const ETHERNET_MIN_FRAME_BYTES: u64 = 64;

/// How a link frames packets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Framing {
    /// The link's rate in bits per second.
    pub link_bps: f64,
    /// The IP MTU in bytes.
    pub mtu_bytes: u64,
    /// Per-frame bytes beyond the IP packet.
    pub overhead_bytes: u64,
    /// Whether IP is version 6 (40-byte header) rather than 4 (20).
    pub ipv6: bool,
}

/// A measured goodput against the framing's theoretical maximum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkEfficiency {
    /// The framing assumed.
    pub framing: Framing,
    /// Payload bytes per packet (or per datagram) in the model.
    pub payload_bytes: u64,
    /// Bytes on the link for that payload.
    pub wire_bytes: u64,
    /// `link_bps x payload_bytes / wire_bytes`.
    pub max_goodput_bps: f64,
    /// The measured goodput as a percentage of `max_goodput_bps`.
    pub percent: f64,
    /// The computation in words and numbers, printed with the result.
    pub formula: String,
}

impl Framing {
    fn ip_header(&self) -> u64 {
        if self.ipv6 {
            40
        } else {
            20
        }
    }

    /// Link bytes of one frame carrying an IP packet of `ip_bytes`.
    fn frame(&self, ip_bytes: u64) -> u64 {
        // The minimum frame only applies when the overhead includes an Ethernet header and FCS.
        let padded = if self.overhead_bytes >= ETHERNET_OVERHEAD_BYTES {
            ip_bytes.max(ETHERNET_MIN_FRAME_BYTES - 18)
        } else {
            ip_bytes
        };
        padded + self.overhead_bytes
    }

    /// The efficiency of `measured_bps` of TCP payload in full segments of `mss` bytes (`tcpi_snd_mss`).
    pub fn tcp(&self, mss: u64, measured_bps: f64) -> LinkEfficiency {
        let wire = self.frame(self.mtu_bytes);
        let formula = format!(
            "{} x {mss} / ({} MTU + {} per frame) (TCP segments of {mss} payload bytes fill the MTU)",
            rate_text(self.link_bps),
            self.mtu_bytes,
            self.overhead_bytes
        );
        self.efficiency(mss, wire, measured_bps, formula)
    }

    /// The efficiency of `measured_bps` of UDP payload in datagrams of `size` bytes.
    pub fn udp(&self, size: u64, measured_bps: f64) -> LinkEfficiency {
        let l4 = size + 8;
        let (fragments, wire) = if l4 + self.ip_header() <= self.mtu_bytes {
            (1, self.frame(l4 + self.ip_header()))
        } else {
            // Every fragment repeats the IP header (and on IPv6 adds an 8-byte fragment header); all but
            // the last carry a multiple of 8 bytes.
            let header = self.ip_header() + if self.ipv6 { 8 } else { 0 };
            let per_fragment = (self.mtu_bytes.saturating_sub(header) / 8 * 8).max(8);
            let fragments = l4.div_ceil(per_fragment);
            let last = l4 - (fragments - 1) * per_fragment;
            (fragments, (fragments - 1) * self.frame(per_fragment + header) + self.frame(last + header))
        };
        let formula = format!(
            "{} x {size} / {wire} ({size} payload + 8 UDP + {} IP header x {fragments} fragment(s) + {} per frame{})",
            rate_text(self.link_bps),
            self.ip_header(),
            self.overhead_bytes,
            if self.frame(l4 + self.ip_header()) > l4 + self.ip_header() + self.overhead_bytes {
                ", padded to the minimum frame"
            } else {
                ""
            }
        );
        self.efficiency(size, wire, measured_bps, formula)
    }

    /// The model for a transport, if it has one (Unix sockets have no link; see `serial_line` for a serial one).
    pub fn for_proto(&self, proto: Proto, payload: u64, measured_bps: f64) -> Option<LinkEfficiency> {
        match proto {
            Proto::Tcp => Some(self.tcp(payload, measured_bps)),
            Proto::Udp => Some(self.udp(payload, measured_bps)),
            // A serial line has its own model (`serial_line`), from its settings rather than a framing.
            Proto::Unix | Proto::Serial => None,
        }
    }

    fn efficiency(&self, payload: u64, wire: u64, measured_bps: f64, formula: String) -> LinkEfficiency {
        let max_goodput_bps = self.link_bps * payload as f64 / wire as f64;
        LinkEfficiency {
            framing: *self,
            payload_bytes: payload,
            wire_bytes: wire,
            max_goodput_bps,
            percent: measured_bps / max_goodput_bps * 100.0,
            formula: format!("{formula} = {:.3} Mbit/s", max_goodput_bps / 1e6),
        }
    }
}

fn rate_text(bps: f64) -> String {
    format!("{} Mbit/s", bps / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gigabit(mtu: u64, ipv6: bool) -> Framing {
        Framing { link_bps: 1e9, mtu_bytes: mtu, overhead_bytes: ETHERNET_OVERHEAD_BYTES, ipv6 }
    }

    #[test]
    fn tcp_over_gigabit_ethernet_tops_out_at_the_textbook_figure() {
        // 1448-byte segments (timestamps on) in 1538 bytes of wire: 941.48 Mbit/s.
        let e = gigabit(1500, false).tcp(1448, 900e6);
        assert_eq!(e.wire_bytes, 1538);
        assert!((e.max_goodput_bps - 941_482_444.7).abs() < 1.0, "{}", e.max_goodput_bps);
        assert!((e.percent - 95.594).abs() < 0.001, "{}", e.percent);
    }

    #[test]
    fn udp_over_gigabit_ethernet_tops_out_at_the_textbook_figure() {
        // 1472-byte datagrams: 1500-byte packets, 1538 bytes of wire: 957.09 Mbit/s.
        let e = gigabit(1500, false).udp(1472, 957e6);
        assert_eq!(e.wire_bytes, 1538);
        assert!((e.max_goodput_bps - 957_087_126.1).abs() < 1.0);
    }

    #[test]
    fn small_datagrams_are_padded_to_the_minimum_frame() {
        // 18 payload bytes: 46-byte IP packet, a 64-byte frame, 84 bytes of wire (RFC 2544's 64-byte frame).
        let e = gigabit(1500, false).udp(18, 0.0);
        assert_eq!(e.wire_bytes, 84);
        assert_eq!(gigabit(1500, false).udp(1, 0.0).wire_bytes, 84);
    }

    #[test]
    fn large_datagrams_are_fragmented() {
        // 8000 payload + 8 UDP = 8008 bytes in fragments of 1480: five full ones and 608 left.
        let e = gigabit(1500, false).udp(8000, 0.0);
        assert_eq!(e.wire_bytes, 5 * 1538 + (608 + 20 + 38));
    }

    #[test]
    fn ipv6_headers_are_longer() {
        assert_eq!(gigabit(1500, true).udp(1452, 0.0).wire_bytes, 1538);
    }

    #[test]
    fn a_custom_overhead_models_other_links() {
        // A shaper that counts only the Ethernet header: 14 bytes per frame and no minimum frame.
        let f = Framing { link_bps: 50e6, mtu_bytes: 1500, overhead_bytes: 14, ipv6: false };
        assert!((f.tcp(1448, 0.0).max_goodput_bps - 47_820_343.4).abs() < 1.0);
        assert_eq!(f.udp(1, 0.0).wire_bytes, 1 + 8 + 20 + 14);
    }
}
