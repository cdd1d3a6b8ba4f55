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
    fn short_datagrams_have_no_header() {
        assert_eq!(ProbeHeader::read_from(&[1, 2, 3]), None);
        assert!(!ProbeHeader { token: 1, sequence: 1 }.write_to(&mut [0u8; 11]));
    }
}
