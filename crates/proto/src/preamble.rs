//! `Preamble`: the fixed 12 bytes that open every TCP or Unix connection to a responder.
//!
//! ```text
//! 0      4        6      7          8            12
//! | LKPF | version | role | reserved | token (u32) |   all integers big-endian
//! ```
//! A data preamble is followed by a 4-byte data header whose meaning depends on the test: for latency, the
//! connection's message size (u32), each message being returned once whole; for throughput, a
//! [`StreamHeader`].
//!
//! The layout is stable across versions, so that a responder can always tell a peer of another version
//! apart from garbage and answer it with an error frame.

use std::io::Read;

use crate::{ProtoError, PROTOCOL_VERSION};

/// Size of the data header that follows a data preamble.
pub const MESSAGE_SIZE_BYTES: usize = 4;

/// The data header of a throughput connection: who sends, and the stream's number.
///
/// ```text
/// 0           1          2              4
/// | direction | reserved | stream (u16) |     direction: 0 the client sends, 1 the responder sends
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHeader {
    /// Which way the data flows.
    pub flow: linkperf_core::throughput::Flow,
    /// The stream's number, unique within the test.
    pub index: u16,
}

impl StreamHeader {
    /// The 4 wire bytes.
    pub fn encode(&self) -> [u8; MESSAGE_SIZE_BYTES] {
        let direction = match self.flow {
            linkperf_core::throughput::Flow::Upload => 0,
            linkperf_core::throughput::Flow::Download => 1,
        };
        let index = self.index.to_be_bytes();
        [direction, 0, index[0], index[1]]
    }

    /// Decodes 4 bytes; `None` for an unknown direction.
    pub fn decode(bytes: [u8; MESSAGE_SIZE_BYTES]) -> Option<Self> {
        let flow = match bytes[0] {
            0 => linkperf_core::throughput::Flow::Upload,
            1 => linkperf_core::throughput::Flow::Download,
            _ => return None,
        };
        Some(Self { flow, index: u16::from_be_bytes([bytes[2], bytes[3]]) })
    }
}

/// The magic bytes that start every connection.
pub const MAGIC: [u8; 4] = *b"LKPF";
/// Size of an encoded preamble.
pub const PREAMBLE_BYTES: usize = 12;

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A control connection: framed messages follow.
    Control = 1,
    /// A data connection of an accepted test: raw test traffic follows.
    Data = 2,
    /// A connection-establishment probe: the responder answers one byte and closes.
    ConnectProbe = 3,
}

impl TryFrom<u8> for Role {
    type Error = ProtoError;
    fn try_from(value: u8) -> Result<Self, ProtoError> {
        match value {
            1 => Ok(Role::Control),
            2 => Ok(Role::Data),
            3 => Ok(Role::ConnectProbe),
            other => Err(ProtoError::UnknownRole(other)),
        }
    }
}

/// The opening of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preamble {
    /// The sender's protocol version.
    pub version: u16,
    /// What the connection is for.
    pub role: Role,
    /// The test token from `TestAccepted` (0 on control connections).
    pub token: u32,
}

impl Preamble {
    /// A preamble of this build's version.
    pub fn new(role: Role, token: u32) -> Self {
        Self { version: PROTOCOL_VERSION, role, token }
    }

    /// The 12 wire bytes.
    pub fn encode(&self) -> [u8; PREAMBLE_BYTES] {
        let mut bytes = [0u8; PREAMBLE_BYTES];
        bytes[..4].copy_from_slice(&MAGIC);
        bytes[4..6].copy_from_slice(&self.version.to_be_bytes());
        bytes[6] = self.role as u8;
        bytes[8..].copy_from_slice(&self.token.to_be_bytes());
        bytes
    }

    /// Decodes 12 bytes. A version other than ours is reported as `VersionMismatch` after the magic is
    /// checked, so the caller can answer it.
    pub fn decode(bytes: &[u8; PREAMBLE_BYTES]) -> Result<Self, ProtoError> {
        let magic: [u8; 4] = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(ProtoError::BadMagic(magic));
        }
        let version = u16::from_be_bytes([bytes[4], bytes[5]]);
        if version != PROTOCOL_VERSION {
            return Err(ProtoError::VersionMismatch { peer: version, ours: PROTOCOL_VERSION });
        }
        let role = Role::try_from(bytes[6])?;
        let token = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        Ok(Self { version, role, token })
    }

    /// Reads and decodes a preamble.
    pub fn read_from<R: Read>(reader: &mut R) -> Result<Self, ProtoError> {
        let mut bytes = [0u8; PREAMBLE_BYTES];
        crate::frame::read_exact_or(reader, &mut bytes, ProtoError::Closed)?;
        Self::decode(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_matches_its_byte_fixture() {
        let bytes = Preamble { version: 1, role: Role::Data, token: 0x0102_0304 }.encode();
        assert_eq!(bytes, [b'L', b'K', b'P', b'F', 0, 1, 2, 0, 1, 2, 3, 4]);
        assert_eq!(Preamble::decode(&bytes).ok(), Some(Preamble { version: 1, role: Role::Data, token: 0x0102_0304 }));
    }

    #[test]
    fn stream_headers_match_their_byte_fixture() {
        use linkperf_core::throughput::Flow;
        let header = StreamHeader { flow: Flow::Download, index: 258 };
        assert_eq!(header.encode(), [1, 0, 1, 2]);
        assert_eq!(StreamHeader::decode([1, 0, 1, 2]), Some(header));
        assert_eq!(StreamHeader::decode([7, 0, 0, 0]), None);
    }

    #[test]
    fn garbage_is_not_a_peer() {
        let bytes = *b"GET / HTTP/1";
        assert!(matches!(Preamble::decode(&bytes), Err(ProtoError::BadMagic(_))));
    }

    #[test]
    fn other_versions_are_named() {
        let mut bytes = Preamble::new(Role::Control, 0).encode();
        bytes[5] = 9;
        assert!(matches!(Preamble::decode(&bytes), Err(ProtoError::VersionMismatch { peer: 9, ours: 1 })));
    }

    #[test]
    fn unknown_roles_are_refused() {
        let mut bytes = Preamble::new(Role::Control, 0).encode();
        bytes[6] = 77;
        assert!(matches!(Preamble::decode(&bytes), Err(ProtoError::UnknownRole(77))));
    }

    #[test]
    fn a_short_preamble_is_truncated_or_closed() {
        assert!(matches!(Preamble::read_from(&mut &b""[..]), Err(ProtoError::Closed)));
        assert!(matches!(Preamble::read_from(&mut &b"LKPF"[..]), Err(ProtoError::Truncated)));
    }
}
