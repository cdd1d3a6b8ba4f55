//! Giving the turns of an alternating (half-duplex) test, from the client.
//!
//! Turns alternate, upload first. A turn's senders write for one interval; then the turn is taken from
//! them and the next turn starts only once the data written has arrived: for an upload turn, once this
//! host's sockets have nothing left unacknowledged (`crate::stream::Turn::wait_drained`); for a download
//! turn, once the responder confirms the same of its sockets (it answers a `Turn { upload }` with a `Turn`
//! of its own when drained, announced by the [`CAPABILITY`]). The time between the end of writing and that
//! moment is the turn's turnaround. Each turn also counts the bytes of the idle direction that arrived
//! during it: zero when turns do not overlap (docs/metrics.md, "Turns").

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::throughput::{Flow, TurnSample};
use socket2::Socket;

use crate::stream::end::{drain_budget, DRAIN_CAP};
use crate::stream::{Turn, TURN_POLL};
use crate::ControlClient;

/// The capability of a responder that confirms, with a `Turn` message, that its download data of a turn
/// has arrived.
pub(super) const CAPABILITY: &str = "drained-turns";

/// What the turn-giving thread works with.
pub(super) struct Turns<'a> {
    /// The control session, for telling the responder whose turn it is.
    pub control: &'a mut ControlClient,
    /// The test's token.
    pub token: u32,
    /// How many turn confirmations the responder has sent, when it sends them.
    pub confirms: Option<&'a AtomicU64>,
    /// The upload senders' turn on this host.
    pub upload: &'a Turn,
    /// The upload streams' sockets (TCP or Unix), whose queues the end of an upload turn drains.
    pub uploads: Vec<&'a Socket>,
    /// The download streams' sockets (TCP or Unix), which a download turn's end reads empty.
    pub downloads: Vec<&'a Socket>,
    /// Bytes the download streams have read here.
    pub downloaded: &'a AtomicU64,
    /// The test's start.
    pub epoch: Instant,
    /// How long each turn writes.
    pub interval: Duration,
    /// How long the test writes in all.
    pub duration: Duration,
}

/// What has arrived of each direction so far, as this host can see it: upload bytes the responder has
/// acknowledged, download bytes read here.
#[derive(Clone, Copy)]
struct Arrived {
    upload: Option<u64>,
    download: u64,
}

impl Turns<'_> {
    fn arrived(&self) -> Arrived {
        let acked: Option<Vec<u64>> =
            self.uploads.iter().map(|s| crate::tcp_info::delivery(s).map(|d| d.acked_bytes)).collect();
        Arrived {
            upload: acked.map(|a| a.iter().sum()).filter(|_| !self.uploads.is_empty()),
            download: self.downloaded.load(Ordering::Relaxed),
        }
    }

    /// Ends an upload turn: stops the writers and waits for their data to be acknowledged.
    fn end_upload(&self, wrote: Duration, before: Arrived) -> Option<Duration> {
        self.upload.take();
        let queued: u64 = self.uploads.iter().filter_map(|s| crate::tcp_info::queued_bytes(s)).sum();
        let acked = self.arrived().upload.zip(before.upload).map_or(0, |(now, then)| now.saturating_sub(then));
        let srtt = self.uploads.iter().filter_map(|s| crate::tcp_info::delivery(s)).map(|d| d.srtt).max();
        let budget = drain_budget(queued, acked as f64 / wrote.as_secs_f64().max(1e-3), srtt.unwrap_or_default());
        self.upload.wait_drained(&self.uploads, Instant::now() + budget)
    }

    /// Ends a download turn: tells the responder, and waits for its confirmation that its data arrived.
    fn end_download(&mut self) -> Option<Duration> {
        let started = Instant::now();
        let seen = self.confirms.map(|c| c.load(Ordering::SeqCst));
        self.control.turn(self.token, Flow::Upload).ok()?;
        let (confirms, seen) = (self.confirms?, seen?);
        // The responder sizes its own drain (at most DRAIN_CAP); a round trip of the control path on top.
        let deadline = started + DRAIN_CAP + Duration::from_secs(2);
        while confirms.load(Ordering::SeqCst) == seen {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(TURN_POLL);
        }
        // Acknowledged is arrived at this host; the readers take what is left in their sockets before the
        // turn's bytes are counted, or they would count in the next turn.
        let read_by = Instant::now() + Duration::from_secs(1);
        while self.downloads.iter().any(|s| crate::tcp_info::unread_bytes(s).unwrap_or(0) > 0)
            && Instant::now() < read_by
        {
            std::thread::sleep(TURN_POLL);
        }
        Some(started.elapsed())
    }
}

/// Gives the turns until the test's duration has passed, and returns them; the last turn is drained too,
/// and no turn is given after it (the senders stop at their duration).
pub(super) fn give_turns(mut turns: Turns) -> Vec<(Flow, TurnSample)> {
    let end = crate::stream::later(turns.epoch, turns.duration);
    let mut samples = Vec::new();
    let mut flow = Flow::Upload;
    let mut start = Instant::now();
    while start < end {
        let before = turns.arrived();
        match flow {
            Flow::Upload => turns.upload.give(),
            Flow::Download => {
                if turns.control.turn(turns.token, Flow::Download).is_err() {
                    break;
                }
            }
        }
        crate::clock::wait_until(crate::stream::later(start, turns.interval).min(end));
        let wrote = start.elapsed();
        let turnaround = match flow {
            Flow::Upload => turns.end_upload(wrote, before),
            Flow::Download => turns.end_download(),
        };
        let after = turns.arrived();
        let (upload, download) = (delta(after.upload, before.upload), Some(after.download - before.download));
        let (bytes, idle_bytes) = match flow {
            Flow::Upload => (upload, download),
            Flow::Download => (download, upload),
        };
        let start_s = start.duration_since(turns.epoch).as_secs_f64();
        let turnaround_s = turnaround.map(|t| t.as_secs_f64());
        samples.push((flow, TurnSample { start_s, writing_s: wrote.as_secs_f64(), turnaround_s, bytes, idle_bytes }));
        flow = match flow {
            Flow::Upload => Flow::Download,
            Flow::Download => Flow::Upload,
        };
        start = Instant::now();
    }
    samples
}

/// Puts a direction's figures of an alternating test on the time its own turns held the link (writing and
/// turnaround, which do not overlap the other direction's turns): `received` and `sent` are every payload
/// byte its receivers read and its senders wrote in the test (`None`: that end's records did not come
/// back). When a turn did not drain, its time is not known, and when the receivers' count is missing
/// there is none to divide: the figures then count the drained turns' own bytes (as this host saw them
/// arrive) over their time, or stay as they are when no turn drained (docs/metrics.md, "Turns").
pub(super) fn rate_over_turns(sum: &mut ThroughputSeries, received: Option<u64>, sent: Option<u64>) {
    let drained: Vec<&TurnSample> = sum.turns.iter().filter(|t| t.held_s().is_some()).collect();
    let held: f64 = drained.iter().filter_map(|t| t.held_s()).sum();
    if drained.is_empty() || held <= 0.0 {
        return;
    }
    // The senders' figure only over all turns: a count of what they wrote in some turns has no source.
    let (received, sent) = match (drained.len() == sum.turns.len(), received) {
        (true, Some(received)) => (received, sent),
        _ => match drained.iter().map(|t| t.bytes).sum::<Option<u64>>() {
            Some(bytes) => (bytes, None),
            None => return,
        },
    };
    let bps = received as f64 * 8.0 / held;
    sum.receiver_bps = Some(bps);
    sum.receiver_bytes = received;
    if let Some(sent) = sent {
        sum.sender_bps = Some(sent as f64 * 8.0 / held);
    }
    sum.window_s = held;
    sum.messages_per_s = Some(bps / 8.0 / sum.size_bytes.max(1) as f64);
    sum.us_per_message = (bps > 0.0).then(|| sum.size_bytes as f64 * 8.0 / bps * 1e6);
}

fn delta(after: Option<u64>, before: Option<u64>) -> Option<u64> {
    after.zip(before).map(|(a, b)| a.saturating_sub(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::Direction;

    fn sum(turns: Vec<TurnSample>) -> ThroughputSeries {
        ThroughputSeries {
            phase: Direction::Alternating,
            size_bytes: 1000,
            flow: Flow::Upload,
            stream: None,
            receiver_bps: Some(1.0),
            sender_bps: Some(1.0),
            receiver_bytes: 1,
            sender_bytes: 1,
            window_s: 10.0,
            messages_per_s: None,
            us_per_message: None,
            intervals: Vec::new(),
            tcp: None,
            udp: None,
            sender_cpu: None,
            receiver_cpu: None,
            link: None,
            client_counters: None,
            responder_counters: None,
            turns,
            complete: true,
        }
    }

    fn turn(bytes: u64, turnaround_s: Option<f64>) -> TurnSample {
        TurnSample { start_s: 0.0, writing_s: 0.5, turnaround_s, bytes: Some(bytes), idle_bytes: Some(0) }
    }

    #[test]
    fn a_direction_is_measured_over_the_time_its_own_turns_held_the_link() {
        // 60 kB read in two turns of 1.5 s each: 160 kbit/s, whatever the receiver's window.
        let mut drained = sum(vec![turn(30_000, Some(1.0)), turn(30_000, Some(1.0))]);
        rate_over_turns(&mut drained, Some(60_000), Some(61_000));
        assert_eq!((drained.receiver_bps, drained.receiver_bytes, drained.window_s), (Some(160_000.0), 60_000, 3.0));
        assert!((drained.sender_bps.unwrap() - 61_000.0 * 8.0 / 3.0).abs() < 1e-9);
        // A turn that did not drain: the drained turns' own bytes over their time, and no sender figure of
        // its own (the window's stays).
        let mut partly = sum(vec![turn(30_000, Some(1.0)), turn(30_000, None)]);
        rate_over_turns(&mut partly, Some(60_000), Some(61_000));
        assert_eq!((partly.receiver_bps, partly.window_s, partly.sender_bps), (Some(160_000.0), 1.5, Some(1.0)));
        // Without the receivers' records, the turns' bytes; without any drained turn, nothing changes.
        let mut unreported = sum(vec![turn(30_000, Some(1.0))]);
        rate_over_turns(&mut unreported, None, Some(30_000));
        assert_eq!(unreported.receiver_bps, Some(160_000.0));
        let mut undrained = sum(vec![turn(30_000, None)]);
        rate_over_turns(&mut undrained, Some(30_000), Some(30_000));
        assert_eq!((undrained.receiver_bps, undrained.window_s), (Some(1.0), 10.0));
    }
}
