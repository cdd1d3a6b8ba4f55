//! The far end of a serial line: send back every byte that arrives, as a loopback plug would, so that two
//! boards or two ports of one host can be measured with `--proto serial` (`linkperf serve --serial PATH`).
//!
//! It echoes bytes as they come (no messages, no control session): the client's checks and timing are the
//! same as against a plug; the round trip then includes this program's read and write. With packing rules
//! it holds bytes and forwards them as a device server would (after N characters, after a quiet time, on a
//! delimiter), so that their effect on round trips can be measured.

use std::time::{Duration, Instant};

use linkperf_core::serial_line::Packing;

use crate::transport::echo_link::EchoLink;
use crate::NetError;

/// How often the loop looks at `stop` while the line is quiet.
const POLL: Duration = Duration::from_millis(100);
/// The most bytes held before they are forwarded whatever the packing says.
const HOLD_BYTES: usize = 4096;

/// Echoes every byte from `link` back to it until `stop` returns true, forwarding as `packing` says (each
/// read at once when it says nothing); returns the bytes echoed. Bytes still held when `stop` comes are
/// sent back first.
pub fn serve_echo(link: &mut dyn EchoLink, stop: &dyn Fn() -> bool, packing: &Packing) -> Result<u64, NetError> {
    let mut buffer = vec![0u8; HOLD_BYTES];
    let mut held: Vec<u8> = Vec::with_capacity(2 * HOLD_BYTES);
    let idle = packing.idle_s.map(Duration::from_secs_f64);
    let mut last_byte = Instant::now();
    let mut echoed = 0u64;
    while !stop() {
        let wait = match idle {
            Some(idle) if !held.is_empty() => idle.saturating_sub(last_byte.elapsed()).min(POLL),
            _ => POLL,
        };
        let n = match wait.is_zero() {
            true => 0,
            false => {
                link.receive(&mut buffer, wait).map_err(|e| NetError::io(format!("reading {}", link.describe()), e))?
            }
        };
        if n > 0 {
            held.extend_from_slice(&buffer[..n]);
            last_byte = Instant::now();
        }
        let quiet = idle.is_some_and(|idle| last_byte.elapsed() >= idle);
        let ready = packing.forward(&held, quiet, HOLD_BYTES);
        echoed += forward(link, &mut held, ready)?;
    }
    let all = held.len();
    echoed += forward(link, &mut held, all)?;
    Ok(echoed)
}

/// Sends the first `count` held bytes back and drops them from `held`.
fn forward(link: &mut dyn EchoLink, held: &mut Vec<u8>, count: usize) -> Result<u64, NetError> {
    if count == 0 {
        return Ok(0);
    }
    link.send(&held[..count]).map_err(|e| NetError::io(format!("writing {}", link.describe()), e))?;
    held.drain(..count);
    Ok(count as u64)
}
