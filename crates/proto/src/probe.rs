//! `ProbeHeader`: the start of every UDP test datagram.
//!
//! ```text
//! 0             4                  12
//! | token (u32) | sequence (u64)   | payload ...    big-endian
//! ```
//! 12 bytes, so the header fits in the 18-byte UDP payload of a minimum 64-byte Ethernet frame. The
//! responder echoes a datagram only if its token belongs to a running UDP test, so its port cannot be used
//! to reflect traffic at strangers.

/// Size of the encoded header; the smallest UDP message a test can send.
pub const PROBE_HEADER_BYTES: usize = 12;

/// The header of a UDP test datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeHeader {
    /// The test token from `TestAccepted`.
    pub token: u32,
    /// The sender's sequence number, from 0.
    pub sequence: u64,
}

impl ProbeHeader {
    /// Writes the header into the start of `datagram`, which must hold at least [`PROBE_HEADER_BYTES`].
    /// Returns `false` (writing nothing) if it does not.
    pub fn write_to(&self, datagram: &mut [u8]) -> bool {
        let Some(header) = datagram.get_mut(..PROBE_HEADER_BYTES) else { return false };
        header[..4].copy_from_slice(&self.token.to_be_bytes());
        header[4..].copy_from_slice(&self.sequence.to_be_bytes());
        true
    }

    /// Reads the header from the start of a datagram; `None` if it is too short.
    pub fn read_from(datagram: &[u8]) -> Option<Self> {
        let header = datagram.get(..PROBE_HEADER_BYTES)?;
        let token = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let mut sequence = [0u8; 8];
        sequence.copy_from_slice(&header[4..]);
        Some(Self { token, sequence: u64::from_be_bytes(sequence) })
    }
}

/// Size of the header of a UDP throughput datagram; the smallest UDP write size of a throughput test.
pub const STREAM_PROBE_BYTES: usize = 16;

/// The header of a UDP throughput datagram: the latency header's token and sequence number, then the send
/// time, so the receiver can estimate jitter.
///
/// ```text
/// 0             4                  12                16
/// | token (u32) | sequence (u64)   | sent_ns (u32)   | payload ...    big-endian
/// ```
/// `sent_ns` is nanoseconds on the sender's clock modulo 2^32; only differences between datagrams are used.
/// Three sequence numbers are control datagrams, not data: [`StreamProbe::REGISTER`] (client to responder,
/// followed by the 4-byte stream header, asks for the stream), [`StreamProbe::ACK`] (responder to client,
/// the stream is ready) and [`StreamProbe::END`] (the sender has finished).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamProbe {
    /// The test token.
    pub token: u32,
    /// The datagram's sequence number from 0, or one of the control values.
    pub sequence: u64,
    /// Send time, nanoseconds modulo 2^32.
    pub sent_ns: u32,
}

impl StreamProbe {
    /// Asks the responder to set up a stream.
    pub const REGISTER: u64 = u64::MAX;
    /// The responder's stream is ready.
    pub const ACK: u64 = u64::MAX - 1;
    /// The sender has finished.
    pub const END: u64 = u64::MAX - 2;

    /// Writes the header into the start of `datagram`; `false` (writing nothing) if it is too short.
    pub fn write_to(&self, datagram: &mut [u8]) -> bool {
        let Some(header) = datagram.get_mut(..STREAM_PROBE_BYTES) else { return false };
        header[..4].copy_from_slice(&self.token.to_be_bytes());
        header[4..12].copy_from_slice(&self.sequence.to_be_bytes());
        header[12..].copy_from_slice(&self.sent_ns.to_be_bytes());
        true
    }

    /// Reads the header from the start of a datagram; `None` if it is too short.
    pub fn read_from(datagram: &[u8]) -> Option<Self> {
        let latency = ProbeHeader::read_from(datagram)?;
        let sent = datagram.get(12..STREAM_PROBE_BYTES)?;
        let sent_ns = u32::from_be_bytes([sent[0], sent[1], sent[2], sent[3]]);
        Some(Self { token: latency.token, sequence: latency.sequence, sent_ns })
    }

    /// Whether this is a data datagram (not a control value).
    pub fn is_data(&self) -> bool {
        self.sequence < Self::END
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_matches_its_byte_fixture() {
        let mut datagram = [0xAAu8; 14];
        assert!(ProbeHeader { token: 0xDEAD_BEEF, sequence: 258 }.write_to(&mut datagram));
        assert_eq!(datagram, [0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0, 0, 0, 1, 2, 0xAA, 0xAA]);
        assert_eq!(ProbeHeader::read_from(&datagram), Some(ProbeHeader { token: 0xDEAD_BEEF, sequence: 258 }));
    }

    #[test]
    fn stream_probes_match_their_byte_fixture() {
        let mut datagram = [0u8; 16];
        assert!(StreamProbe { token: 1, sequence: 2, sent_ns: 0x0A0B_0C0D }.write_to(&mut datagram));
        assert_eq!(datagram, [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0x0A, 0x0B, 0x0C, 0x0D]);
        let probe = StreamProbe::read_from(&datagram).unwrap();
        assert_eq!(probe, StreamProbe { token: 1, sequence: 2, sent_ns: 0x0A0B_0C0D });
        assert!(probe.is_data());
        assert!(!StreamProbe { sequence: StreamProbe::END, ..probe }.is_data());
        assert_eq!(StreamProbe::read_from(&datagram[..15]), None);
    }

    #[test]
    fn short_datagrams_have_no_header() {
        assert_eq!(ProbeHeader::read_from(&[1, 2, 3]), None);
        assert!(!ProbeHeader { token: 1, sequence: 1 }.write_to(&mut [0u8; 11]));
    }
}
