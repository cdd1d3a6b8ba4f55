//! `receive`: the receiving end of a stream, on either host.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use linkperf_core::throughput::{Bins, End, Flow, StreamMeter};
use socket2::Socket;

use super::{Ending, Intake, Outcome, Shared};

/// What a receiving stream end does.
#[derive(Debug, Clone, Copy)]
pub struct ReceivePlan {
    /// The stream's number in its test.
    pub index: u16,
    /// Its direction.
    pub flow: Flow,
    /// The meter's grid.
    pub bins: Bins,
    /// Receive with `MSG_TRUNC` (TCP drops the data in the kernel).
    pub discard: bool,
    /// How long a read may bring nothing before the stream is stalled; `None`: only `stop` ends the wait.
    pub stall: Option<Duration>,
}

/// Reads to the end of the stream, metering each read on the shared clock (whose origin is the first byte
/// any stream of the host receives, unless set before) and adding it to `shared.moved`. `stop` is asked
/// after each read and each blocked tick; `true` ends the stream with what it has read.
pub fn receive(socket: &Socket, plan: &ReceivePlan, shared: Shared, mut stop: impl FnMut(Instant) -> bool) -> Outcome {
    let mut meter = StreamMeter::new(plan.index, plan.flow, End::Receiver, plan.bins);
    let mut intake = Intake::new(plan.discard);
    if let Err(e) = socket.set_read_timeout(Some(super::TICK)) {
        return Outcome { record: meter.finish(None), ending: Ending::Failed(e) };
    }
    let mut last_progress = Instant::now();
    let ending = loop {
        match intake.receive(socket) {
            Ok(0) => break Ending::Completed,
            Ok(n) => {
                let now = Instant::now();
                meter.record(n as u64, shared.origin.since(now));
                if let Some(moved) = shared.moved {
                    moved.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                }
                last_progress = now;
                if stop(now) {
                    break Ending::Stopped;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                let now = Instant::now();
                if let Some(stall) = plan.stall.filter(|&s| now.duration_since(last_progress) >= s) {
                    break Ending::Stalled(stall);
                }
                if stop(now) {
                    break Ending::Stopped;
                }
            }
            Err(e) => break Ending::Failed(e),
        }
    };
    Outcome { record: meter.finish(None), ending }
}
