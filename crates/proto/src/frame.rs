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
    serde_json::from_slice(body).map_err(|e| ProtoError::Malformed(e.to_string()))
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
        let frame = encode_frame(&Message::AuthOk { proof: "ab".into() });
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

    #[test]
    fn malformed_bodies_are_errors() {
        for body in [&b"not json"[..], br#"{"type":"no_such_message"}"#, br#"{"type":"test_done"}"#, b"\xff\xfe"] {
            let mut frame = (body.len() as u32).to_be_bytes().to_vec();
            frame.extend_from_slice(body);
            assert!(matches!(read_frame(&mut frame.as_slice()), Err(ProtoError::Malformed(_))), "{body:?}");
        }
    }
}
