//! Control framing as the responder reads it: a length, then a JSON body, arriving in pieces of any size
//! with read timeouts between them. The first byte of the input picks the piece size; the rest is the
//! stream. Reading must never panic nor reserve memory for a length above the limit.
#![no_main]

use std::io::{ErrorKind, Read};

use libfuzzer_sys::fuzz_target;
use linkperf_proto::{read_frame_up_to, FrameReader, MAX_FRAME_BYTES};

/// Returns its bytes `piece` at a time, with a timeout (`WouldBlock`) before each piece.
struct Pieces<'a> {
    bytes: &'a [u8],
    piece: usize,
    timeout_next: bool,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.timeout_next = !self.timeout_next;
        if self.timeout_next {
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = self.piece.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, stream)) = data.split_first() else { return };
    let mut source = Pieces { bytes: stream, piece: usize::from(piece).max(1), timeout_next: false };
    let mut reader = FrameReader::new();
    // Each call either makes progress, times out (one per piece) or ends the stream.
    for _ in 0..4 * stream.len() + 8 {
        match reader.next(&mut source, MAX_FRAME_BYTES) {
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = read_frame_up_to(&mut &stream[..], MAX_FRAME_BYTES);
});
