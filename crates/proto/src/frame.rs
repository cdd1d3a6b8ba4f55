//! Control-message framing: a 4-byte big-endian body length, then the body, a JSON object whose `type`
//! field names the message.
//!
//! Lengths above [`MAX_FRAME_BYTES`] are refused before anything is allocated, so a peer cannot make a
//! responder reserve memory by announcing a huge frame.

use std::io::{ErrorKind, Read, Write};

use crate::{Message, ProtoError};

/// The largest frame body a responder accepts, in bytes.
pub const MAX_FRAME_BYTES: u32 = 64 * 1024;
/// The largest frame body a client accepts (throughput reports carry every stream's bins), in bytes.
pub const MAX_CLIENT_FRAME_BYTES: u32 = 16 * 1024 * 1024;

/// Encodes a message as one frame (header and body).
pub fn encode_frame(message: &Message) -> Vec<u8> {
    // Serialising a `Message` cannot fail: it holds only strings, numbers, enums and plain structs.
    #[allow(clippy::unwrap_used)]
    let body = serde_json::to_vec(message).unwrap();
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// Decodes one frame body.
pub fn decode_body(body: &[u8]) -> Result<Message, ProtoError> {
    // The decoder's text may quote the peer's bytes: escaped here, so every printer of it is safe.
    serde_json::from_slice(body).map_err(|e| ProtoError::Malformed(crate::printable(&e.to_string(), 200)))
}

/// Writes one message as a frame and flushes it.
pub fn write_frame<W: Write>(writer: &mut W, message: &Message) -> Result<(), ProtoError> {
    let frame = encode_frame(message);
    if frame.len() - 4 > MAX_CLIENT_FRAME_BYTES as usize {
        return Err(ProtoError::Oversized((frame.len() - 4) as u32));
    }
    writer.write_all(&frame)?;
    writer.flush()?;
    Ok(())
}

/// Reads one frame of at most [`MAX_FRAME_BYTES`] and decodes its message. A clean end of input before the
/// header is `Closed`; an end inside a frame is `Truncated`.
pub fn read_frame<R: Read>(reader: &mut R) -> Result<Message, ProtoError> {
    read_frame_up_to(reader, MAX_FRAME_BYTES)
}

/// Reads one frame of at most `max` bytes and decodes its message.
pub fn read_frame_up_to<R: Read>(reader: &mut R, max: u32) -> Result<Message, ProtoError> {
    let mut header = [0u8; 4];
    read_exact_or(reader, &mut header, ProtoError::Closed)?;
    let length = u32::from_be_bytes(header);
    if length > max {
        return Err(ProtoError::Oversized(length));
    }
    let mut body = vec![0u8; length as usize];
    read_exact_or(reader, &mut body, ProtoError::Truncated)?;
    decode_body(&body)
}

/// Reads frames from a source whose reads may time out, keeping a partial frame across timeouts so that a
/// timeout never loses its place in the stream.
#[derive(Debug, Default)]
pub struct FrameReader {
    pending: Vec<u8>,
}

impl FrameReader {
    /// A reader with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next whole message: `Ok(None)` if a read timed out before one was complete (call again), an
    /// error for a closed, oversized or malformed stream. Frames may be up to `max` bytes.
    pub fn next<R: Read>(&mut self, reader: &mut R, max: u32) -> Result<Option<Message>, ProtoError> {
        loop {
            if let Some(message) = self.take(max)? {
                return Ok(Some(message));
            }
            let mut chunk = [0u8; 16 * 1024];
            match reader.read(&mut chunk) {
                Ok(0) if self.pending.is_empty() => return Err(ProtoError::Closed),
                Ok(0) => return Err(ProtoError::Truncated),
                Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// A whole frame from what is pending, if there is one.
    fn take(&mut self, max: u32) -> Result<Option<Message>, ProtoError> {
        take_frame(&mut self.pending, max)
    }
}

/// Takes the first whole frame of at most `max` bytes off the front of `pending` and decodes it: `Ok(None)`
/// while it is incomplete. An oversized length is refused from its header alone, before its body comes.
pub(crate) fn take_frame(pending: &mut Vec<u8>, max: u32) -> Result<Option<Message>, ProtoError> {
    let Some(header) = pending.get(..4) else { return Ok(None) };
    let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if length > max {
        return Err(ProtoError::Oversized(length));
    }
    let end = 4 + length as usize;
    if pending.len() < end {
        return Ok(None);
    }
    let message = decode_body(&pending[4..end]);
    pending.drain(..end);
    message.map(Some)
}

/// Fills `buf`, returning `at_start` if input ends before the first byte and `Truncated` if it ends later.
pub(crate) fn read_exact_or<R: Read>(reader: &mut R, buf: &mut [u8], at_start: ProtoError) -> Result<(), ProtoError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Err(at_start),
            Ok(0) => return Err(ProtoError::Truncated),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn frames_match_their_byte_fixture() {
        let frame = encode_frame(&Message::AuthOk { proof: "ab".into(), host: None });
        let body = br#"{"type":"auth_ok","proof":"ab"}"#;
        let mut expected = (body.len() as u32).to_be_bytes().to_vec();
        expected.extend_from_slice(body);
        assert_eq!(frame, expected);
    }

    #[test]
    fn frames_round_trip() {
        let message = Message::Error { code: ErrorCode::OverLimit, message: "too many sessions".into() };
        let frame = encode_frame(&message);
        assert_eq!(read_frame(&mut frame.as_slice()).ok(), Some(message));
    }

    #[test]
    fn oversized_frames_are_refused_before_reading_the_body() {
        let header = (MAX_FRAME_BYTES + 1).to_be_bytes();
        assert!(matches!(read_frame(&mut &header[..]), Err(ProtoError::Oversized(n)) if n == MAX_FRAME_BYTES + 1));
    }

    #[test]
    fn truncated_frames_are_errors() {
        let frame = encode_frame(&Message::TestDone { token: 7 });
        assert!(matches!(read_frame(&mut &frame[..2]), Err(ProtoError::Truncated)));
        assert!(matches!(read_frame(&mut &frame[..frame.len() - 1]), Err(ProtoError::Truncated)));
        assert!(matches!(read_frame(&mut &b""[..]), Err(ProtoError::Closed)));
    }

    /// A source that returns its bytes in small pieces, with a timeout between each.
    struct Trickle {
        pieces: Vec<Vec<u8>>,
        timeout_next: bool,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.timeout_next = !self.timeout_next;
            if self.timeout_next {
                return Err(ErrorKind::WouldBlock.into());
            }
            match self.pieces.first_mut() {
                None => Ok(0),
                Some(piece) => {
                    let n = piece.len().min(buf.len());
                    buf[..n].copy_from_slice(&piece[..n]);
                    piece.drain(..n);
                    if piece.is_empty() {
                        self.pieces.remove(0);
                    }
                    Ok(n)
                }
            }
        }
    }

    #[test]
    fn a_frame_reader_keeps_its_place_across_timeouts() {
        let mut bytes = encode_frame(&Message::TestDone { token: 1 });
        bytes.extend(encode_frame(&Message::TestDone { token: 2 }));
        let pieces = bytes.chunks(3).map(<[u8]>::to_vec).collect();
        let mut source = Trickle { pieces, timeout_next: false };
        let mut reader = FrameReader::new();
        let mut got = Vec::new();
        for _ in 0..1000 {
            match reader.next(&mut source, MAX_FRAME_BYTES) {
                Ok(Some(message)) => got.push(message),
                Ok(None) => {}
                Err(ProtoError::Closed) => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(got, vec![Message::TestDone { token: 1 }, Message::TestDone { token: 2 }]);
    }

    #[test]
    fn malformed_bodies_are_errors() {
        for body in [&b"not json"[..], br#"{"type":"no_such_message"}"#, br#"{"type":"test_done"}"#, b"\xff\xfe"] {
            let mut frame = (body.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(body);
            assert!(matches!(read_frame(&mut frame.as_slice()), Err(ProtoError::Malformed(_))), "{body:?}");
        }
    }
}
