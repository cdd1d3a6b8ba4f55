//! `send`: the sending end of a stream, on either host.

use std::io::{ErrorKind, Write};
use std::time::{Duration, Instant};

use linkperf_core::throughput::{Bins, End, Flow, StreamMeter, TcpStats};
use socket2::Socket;

use super::{Ending, Outcome, Shared, TURN_POLL};

/// How long a write blocks at most while the directions take turns: a write under way when the turn ends
/// holds the turn until it returns.
const TURN_WRITE_TICK: Duration = Duration::from_millis(5);

/// How often a TCP sender samples its smoothed round trip for the largest one (`max_srtt_us`): often
/// enough to see a queue fill over a few of a slow link's round trips, at the cost of one `getsockopt`.
const SRTT_SAMPLE: Duration = Duration::from_millis(100);

/// What a sending stream end does.
#[derive(Debug, Clone, Copy)]
pub struct SendPlan {
    /// The stream's number in its test.
    pub index: u16,
    /// Its direction.
    pub flow: Flow,
    /// The meter's grid.
    pub bins: Bins,
    /// Bytes per write call.
    pub write_bytes: usize,
    /// How long to write, from the stream's start.
    pub duration: Duration,
    /// How long a write may accept nothing (and the drain see nothing move) before the stream is stalled.
    pub stall: Duration,
}

/// Writes for the plan's duration (while the turn, if any, is this direction's), metering each write on
/// the shared clock. `stop` is asked after each write and each blocked tick; `true` ends the stream at
/// once. The caller then ends the stream with [`super::end::finish_sending`] (after storing the record where the
/// peer may ask for it before it sees the end).
pub fn send(socket: &Socket, plan: &SendPlan, shared: Shared, mut stop: impl FnMut(Instant) -> bool) -> Outcome {
    let mut meter = StreamMeter::new(plan.index, plan.flow, End::Sender, plan.bins);
    let buffer: Vec<u8> = (0..plan.write_bytes.max(1)).map(|i| (i % 251) as u8).collect();
    let tick = if shared.turn.is_some() { TURN_WRITE_TICK } else { super::TICK };
    // Writes return at least every tick with what they wrote so far: on a slow link one write may take
    // longer than the whole test, and the duration must still end it.
    if let Err(e) = socket.set_write_timeout(Some(tick)) {
        return Outcome { record: meter.finish(None), ending: Ending::Failed(e) };
    }
    // The shared clock starts at the first byte moved (not at this sender's start): a sender waiting for its
    // turn must not start the clock of the host's receivers before their data comes.
    let started = Instant::now();
    let (mut last_progress, mut inside) = (started, false);
    let mut round_trips = RoundTrips { max_us: 0, next: started };
    let ending = loop {
        let now = Instant::now();
        if now.duration_since(started) >= plan.duration {
            break Ending::Completed;
        }
        if let Some(turn) = shared.turn {
            if !turn.enter(&mut inside) {
                std::thread::sleep(TURN_POLL);
                // Waiting for a turn is not a stall.
                last_progress = Instant::now();
                if stop(last_progress) {
                    break Ending::Stopped;
                }
                continue;
            }
        }
        round_trips.sample(socket, now);
        match (&*socket).write(&buffer) {
            Ok(n) => {
                let done = Instant::now();
                meter.record(n as u64, shared.origin.since(done));
                last_progress = done;
                if stop(done) {
                    break Ending::Stopped;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                // A tick without a byte accepted: the path is stuck once that lasts the stall time.
                let now = Instant::now();
                if now.duration_since(last_progress) >= plan.stall {
                    break Ending::Stalled(plan.stall);
                }
                if stop(now) {
                    break Ending::Stopped;
                }
            }
            Err(e) => break Ending::Failed(e),
        }
    };
    if let Some(turn) = shared.turn {
        turn.leave(&mut inside);
    }
    let tcp = crate::tcp_info::tcp_stats(socket)
        .map(|t| TcpStats { max_srtt_us: Some(round_trips.max_us.max(t.srtt_us)), ..t });
    Outcome { record: meter.finish(tcp), ending }
}

/// The largest smoothed round trip a sender has seen, sampled every [`SRTT_SAMPLE`].
struct RoundTrips {
    max_us: u64,
    next: Instant,
}

impl RoundTrips {
    fn sample(&mut self, socket: &Socket, now: Instant) {
        if now < self.next {
            return;
        }
        self.next = now + SRTT_SAMPLE;
        if let Some(delivery) = crate::tcp_info::delivery(socket) {
            self.max_us = self.max_us.max(u64::try_from(delivery.srtt.as_micros()).unwrap_or(u64::MAX));
        }
    }
}
