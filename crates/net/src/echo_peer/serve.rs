//! The far end of a serial line: send back every byte that arrives, as a loopback plug would, so that two
//! boards or two ports of one host can be measured with `--proto serial` (`linkperf serve --serial PATH`).
//!
//! It echoes bytes as they come (no messages, no control session): the client's checks and timing are the
//! same as against a plug; the round trip then includes this program's read and write.

use std::time::Duration;

use crate::transport::echo_link::EchoLink;
use crate::NetError;

/// How often the loop looks at `stop` while the line is quiet.
const POLL: Duration = Duration::from_millis(100);

/// Echoes every byte from `link` back to it until `stop` returns true; returns the bytes echoed.
pub fn serve_echo(link: &mut dyn EchoLink, stop: &dyn Fn() -> bool) -> Result<u64, NetError> {
    let mut buffer = vec![0u8; 4096];
    let mut echoed = 0u64;
    while !stop() {
        let n = link.receive(&mut buffer, POLL).map_err(|e| NetError::io(format!("reading {}", link.describe()), e))?;
        if n > 0 {
            link.send(&buffer[..n]).map_err(|e| NetError::io(format!("writing {}", link.describe()), e))?;
            echoed += n as u64;
        }
    }
    Ok(echoed)
}
