//! Whatever bytes a peer sends, the decoders return a value or an error, never a panic: generated input
//! for every decoder of peer data (frames, preambles, probe headers, stream headers, message bodies).

use std::io::Cursor;

use linkperf_proto::frame::decode_body;
use linkperf_proto::{FrameReader, Preamble, ProbeHeader, StreamHeader, StreamProbe, MAX_FRAME_BYTES};
use proptest::prelude::*;

proptest! {
    #[test]
    fn frames_of_any_bytes_decode_or_fail(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let mut reader = FrameReader::new();
        let mut input = Cursor::new(bytes);
        // Read until the input ends or is refused; each call returns.
        for _ in 0..64 {
            match reader.next(&mut input, MAX_FRAME_BYTES) {
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => break,
            }
        }
    }

    #[test]
    fn a_frame_with_any_length_and_body_decodes_or_fails(length in any::<u32>(), body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut bytes = length.to_be_bytes().to_vec();
        bytes.extend(body);
        let _ = FrameReader::new().next(&mut Cursor::new(bytes), MAX_FRAME_BYTES);
    }

    #[test]
    fn message_bodies_of_any_bytes_decode_or_fail(body in proptest::collection::vec(any::<u8>(), 0..1024)) {
        let _ = decode_body(&body);
    }

    #[test]
    fn json_shaped_bodies_decode_or_fail(text in "\\{\"type\":\"[a-z_]{0,16}\"(,\"[a-z_]{1,12}\":(-?[0-9]{1,20}|\"[ -~]{0,20}\"|null|\\[\\]|\\{\\}))*\\}") {
        let _ = decode_body(text.as_bytes());
    }

    #[test]
    fn preambles_and_headers_of_any_bytes_decode_or_fail(bytes in proptest::array::uniform12(any::<u8>()), datagram in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = Preamble::decode(&bytes);
        let _ = Preamble::read_from(&mut Cursor::new(bytes.to_vec()));
        let _ = StreamHeader::decode([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let _ = ProbeHeader::read_from(&datagram);
        let _ = StreamProbe::read_from(&datagram);
    }
}
