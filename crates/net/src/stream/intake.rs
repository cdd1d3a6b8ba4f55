//! `Intake`: where a receiving stream puts what it reads.

use std::io::Read;
use std::mem::MaybeUninit;

use socket2::Socket;

/// Bytes a receiving stream copies out per read. Small on purpose: the kernel holds the socket's lock while
/// it copies, and meanwhile cannot queue arriving segments or send ACKs; 32 KiB reads moved 1.4x more TCP
/// over loopback here than 1 MiB reads (42 vs 30 Gbit/s, bench/throughput.sh).
const COPY_CHUNK_BYTES: usize = 32 * 1024;
/// Bytes a discarding receive (`MSG_TRUNC`) drops per call: nothing is copied, so larger is cheaper.
const DISCARD_CHUNK_BYTES: usize = 1024 * 1024;

/// A buffer to copy into, or with `discard` nowhere: receiving with `MSG_TRUNC` on TCP drops up to the
/// buffer's length in the kernel without copying and returns how many bytes it dropped. (Unix stream
/// sockets ignore the flag and copy as usual.)
pub struct Intake {
    copy: Vec<u8>,
    scratch: Vec<MaybeUninit<u8>>,
    discard: bool,
}

impl Intake {
    /// An intake that copies (or with `discard`, drops) what arrives, a chunk per call.
    pub fn new(discard: bool) -> Self {
        let (copy, scratch) = if discard {
            (Vec::new(), vec![MaybeUninit::uninit(); DISCARD_CHUNK_BYTES])
        } else {
            (vec![0; COPY_CHUNK_BYTES], Vec::new())
        };
        Self { copy, scratch, discard }
    }

    /// One receive call; `Ok(0)` is the end of the stream.
    #[inline]
    pub fn receive(&mut self, mut socket: &Socket) -> std::io::Result<usize> {
        if self.discard {
            socket.recv_with_flags(&mut self.scratch, libc::MSG_TRUNC)
        } else {
            socket.read(&mut self.copy)
        }
    }
}
