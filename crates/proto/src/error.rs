//! `ProtoError`: everything that can be wrong with bytes from a peer.

/// A protocol violation or an I/O failure while reading or writing protocol data.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The connection did not start with the linkperf magic: not a linkperf peer.
    #[error("not a linkperf peer (bad magic {0:02x?})")]
    BadMagic([u8; 4]),
    /// The peer speaks another protocol version.
    #[error("peer speaks protocol version {peer}, this build speaks {ours}")]
    VersionMismatch {
        /// The peer's version.
        peer: u16,
        /// Ours.
        ours: u16,
    },
    /// The preamble names a role this build does not know.
    #[error("unknown connection role {0}")]
    UnknownRole(u8),
    /// A frame announced a body larger than the maximum.
    #[error("frame of {0} bytes exceeds the maximum frame size")]
    Oversized(u32),
    /// A frame's body is not a valid message.
    #[error("malformed message: {0}")]
    Malformed(String),
    /// Input ended in the middle of a preamble, header or frame.
    #[error("truncated input: the peer closed the connection mid-message")]
    Truncated,
    /// The peer closed the connection between messages.
    #[error("the peer closed the connection")]
    Closed,
    /// Reading or writing failed (a timeout shows here as `WouldBlock` or `TimedOut`).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl ProtoError {
    /// Whether this error is a read timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, ProtoError::Io(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
    }
}
