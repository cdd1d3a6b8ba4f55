//! Round trips against an echoing peer: send a message, time until its last byte is back, check every byte.
//!
//! A message counts as a round trip only when all its bytes came back unchanged; a changed byte is counted
//! and the message left out of the times. On a byte stream (TCP, a serial line) bytes that do not come back
//! within the timeout leave the stream out of step, so the run ends there with what was measured kept; on
//! a datagram link the message is counted lost and the next one is sent.

use std::time::{Duration, Instant};

use linkperf_core::run_result::SeriesCounters;
use linkperf_core::{HostFacts, LatencySpec, RttHistogram, Series, StopCondition};

use super::payload::Payload;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::transport::echo_link::EchoLink;
use crate::NetError;

/// Bytes of a datagram message that hold its sequence number, so that a late echo of an earlier message
/// is recognised instead of being taken for a changed one.
pub const DATAGRAM_HEADER_BYTES: usize = 8;

/// What became of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Echo {
    /// Every byte came back unchanged.
    Intact,
    /// Every byte came back, `0` of them changed.
    Changed(u64),
    /// The timeout passed with `0` bytes still missing.
    Missing(u64),
}

/// One link's series at one size, and how its messages fared.
#[derive(Default)]
struct SessionOutcome {
    histogram: RttHistogram,
    counters: SeriesCounters,
    changed_messages: u64,
    changed_bytes: u64,
    missing_bytes: u64,
    error: Option<NetError>,
}

/// How long the bytes of one echo may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoTimeouts {
    /// The whole message, from its sending to its last byte back.
    pub message: Duration,
    /// The longest silence between two bytes of one message's echo (`None`: only `message` applies).
    pub inter_character: Option<Duration>,
}

/// Runs one series per message size over every link at once (each link its own session); returns what was
/// measured and what stopped it. Series: the aggregate first, then each link's when there are several.
/// `spec.timeout_s` is replaced by `timeouts`.
pub fn run_echo_latency(
    links: &mut [Box<dyn EchoLink>],
    spec: &LatencySpec,
    payload: Payload,
    timeouts: EchoTimeouts,
    observer: &dyn Observer,
) -> MeasuredRun<Series> {
    let mut run = MeasuredRun::new(HostFacts::default());
    for &size in &spec.sizes_bytes {
        let (total, unit) = match spec.stop {
            StopCondition::Count(n) => (n * links.len() as u64, ProgressUnit::Transactions),
            StopCondition::DurationS(s) => ((s * 1000.0) as u64, ProgressUnit::Milliseconds),
        };
        observer.phase(&format!("{size} B echo"), total, unit);
        let outcomes: Vec<SessionOutcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = links
                .iter_mut()
                .enumerate()
                .map(|(i, link)| {
                    scope.spawn(move || measure(link.as_mut(), size as usize, (spec, timeouts), payload, observer, i))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        let error = collect(&mut run, &outcomes, size, links);
        run.series.iter().for_each(|s| observer.measured(Measurement::Series(s)));
        if let Some(error) = error {
            run.error = Some(error);
            break;
        }
    }
    run
}

/// Adds one size's series and warnings to `run`; returns the first error.
fn collect(
    run: &mut MeasuredRun<Series>,
    outcomes: &[SessionOutcome],
    size: u64,
    links: &[Box<dyn EchoLink>],
) -> Option<NetError> {
    let mut histogram = RttHistogram::new();
    let mut counters = SeriesCounters { complete: true, ..SeriesCounters::default() };
    for o in outcomes {
        histogram.merge(&o.histogram);
        counters.merge(&o.counters);
    }
    run.series.push(Series::new(Some(size), None, &histogram, counters));
    if outcomes.len() > 1 {
        for (i, o) in outcomes.iter().enumerate() {
            run.series.push(Series::new(Some(size), Some(i as u32 + 1), &o.histogram, o.counters));
        }
    }
    for (o, link) in outcomes.iter().zip(links) {
        if o.changed_messages > 0 {
            run.warnings.push(format!(
                "{}: {} of the {size} B messages {} ({} bytes differed); they are counted, not timed",
                link.describe(),
                o.changed_messages,
                super::CHANGED_WARNING,
                o.changed_bytes
            ));
        }
        if o.missing_bytes > 0 {
            run.warnings.push(format!(
                "{}: {} bytes of the {size} B messages never came back ({} messages lost)",
                link.describe(),
                o.missing_bytes,
                o.counters.lost
            ));
        }
    }
    outcomes.iter().find_map(|o| o.error.as_ref()).map(clone_error)
}

/// The error of one session, for the run (errors are not `Clone`: the text is kept).
fn clone_error(error: &NetError) -> NetError {
    match error {
        NetError::Interrupted => NetError::Interrupted,
        NetError::Timeout { what, timeout_s } => NetError::Timeout { what: what.clone(), timeout_s: *timeout_s },
        other => NetError::Invalid(other.to_string()),
    }
}

/// One link's series: warm-up, then timed messages until the stop condition, a stall or Ctrl-C.
fn measure(
    link: &mut dyn EchoLink,
    size: usize,
    (spec, timeouts): (&LatencySpec, EchoTimeouts),
    payload: Payload,
    observer: &dyn Observer,
    index: usize,
) -> SessionOutcome {
    let timeout = timeouts.message;
    let mut out = SessionOutcome::default();
    let mut buffers = (vec![0u8; size], vec![0u8; size + DATAGRAM_HEADER_BYTES + 1]);
    let mut sequence = 0u64;
    let start = Instant::now();
    let end = spec.stop.duration().map(|d| start + d);
    let (mut attempts, mut reported, mut next_report) = (0u64, 0u64, start);
    let complete = loop {
        let timed = sequence >= spec.warmup;
        if timed
            && (matches!(spec.stop, StopCondition::Count(n) if attempts >= n)
                || end.is_some_and(|e| Instant::now() >= e))
        {
            break true;
        }
        sequence += 1;
        let sent_at = Instant::now();
        let echo = match exchange(link, &mut buffers, sequence, payload, timeouts) {
            Ok(echo) => echo,
            Err(e) => {
                out.error = Some(NetError::io(format!("echo over {}", link.describe()), e));
                break false;
            }
        };
        let rtt = sent_at.elapsed();
        if !timed {
            if let Echo::Missing(_) = echo {
                out.error = Some(stall(link, timeout, "a warm-up message (does the peer echo?)"));
                break false;
            }
            continue;
        }
        attempts += 1;
        match echo {
            Echo::Intact => out.histogram.record(rtt.as_nanos() as u64),
            Echo::Changed(bytes) => {
                out.changed_messages += 1;
                out.changed_bytes += bytes;
            }
            Echo::Missing(bytes) => {
                out.counters.lost += 1;
                out.missing_bytes += bytes;
                if !link.is_datagram() {
                    let what = if out.histogram.count() == 0 {
                        format!("{bytes} of {size} bytes of the first message (does the peer echo?)")
                    } else {
                        format!("{bytes} of {size} bytes of a message")
                    };
                    out.error = Some(stall(link, timeout, &what));
                    break false;
                }
            }
        }
        let now = Instant::now();
        if now >= next_report {
            next_report = now + Duration::from_millis(100);
            if observer.cancelled() {
                out.error = Some(NetError::Interrupted);
                break false;
            }
            if index == 0 {
                let progress = if end.is_some() { now.duration_since(start).as_millis() as u64 } else { attempts };
                observer.advance(progress.saturating_sub(reported));
                reported = progress;
            }
        }
    };
    out.counters.elapsed_s = start.elapsed().as_secs_f64();
    out.counters.complete = complete;
    out
}

pub(super) fn stall(link: &dyn EchoLink, timeout: Duration, what: &str) -> NetError {
    NetError::Timeout { what: format!("{what} echoed over {}", link.describe()), timeout_s: timeout.as_secs_f64() }
}

/// Sends message `sequence` and waits for its echo.
pub(super) fn exchange(
    link: &mut dyn EchoLink,
    (sent, back): &mut (Vec<u8>, Vec<u8>),
    sequence: u64,
    payload: Payload,
    timeouts: EchoTimeouts,
) -> std::io::Result<Echo> {
    payload.fill(sequence, 0, sent);
    let datagram = link.is_datagram();
    if datagram {
        let header = sent.len().min(DATAGRAM_HEADER_BYTES);
        sent[..header].copy_from_slice(&sequence.to_le_bytes()[..header]);
    }
    link.send(sent)?;
    let deadline = Instant::now() + timeouts.message;
    if datagram {
        receive_datagram(link, sent, back, sequence, deadline)
    } else {
        receive_stream(link, sent, back, deadline, timeouts.inter_character)
    }
}

/// Reads until all of `sent`'s bytes are back (they come in fragments), or the deadline passes, or (once
/// the first byte is back) the line is silent for longer than the inter-character timeout.
fn receive_stream(
    link: &mut dyn EchoLink,
    sent: &[u8],
    back: &mut [u8],
    deadline: Instant,
    inter_character: Option<Duration>,
) -> std::io::Result<Echo> {
    let size = sent.len();
    let mut got = 0;
    while got < size {
        let now = Instant::now();
        let mut left = deadline.saturating_duration_since(now);
        if let Some(gap) = inter_character.filter(|_| got > 0) {
            left = left.min(gap);
        }
        if left.is_zero() {
            return Ok(Echo::Missing((size - got) as u64));
        }
        let n = link.receive(&mut back[got..size], left)?;
        if n == 0 && got > 0 && inter_character.is_some_and(|gap| now.elapsed() >= gap) {
            return Ok(Echo::Missing((size - got) as u64));
        }
        got += n;
    }
    Ok(compare(sent, &back[..size]))
}

/// Waits for the echo of datagram `sequence`, skipping late echoes of earlier ones.
fn receive_datagram(
    link: &mut dyn EchoLink,
    sent: &[u8],
    back: &mut [u8],
    sequence: u64,
    deadline: Instant,
) -> std::io::Result<Echo> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(Echo::Missing(sent.len() as u64));
        }
        let n = link.receive(back, left)?;
        if n == 0 {
            continue;
        }
        let header = sent.len().min(DATAGRAM_HEADER_BYTES);
        if header == DATAGRAM_HEADER_BYTES && n >= header {
            let mut tag = [0u8; DATAGRAM_HEADER_BYTES];
            tag.copy_from_slice(&back[..header]);
            if u64::from_le_bytes(tag) < sequence {
                continue; // a late echo of an earlier message, already counted lost
            }
        }
        if n != sent.len() {
            return Ok(Echo::Changed(sent.len().abs_diff(n) as u64 + differing(sent, &back[..n.min(sent.len())])));
        }
        return Ok(compare(sent, &back[..n]));
    }
}

fn differing(sent: &[u8], back: &[u8]) -> u64 {
    sent.iter().zip(back).filter(|(a, b)| a != b).count() as u64
}

fn compare(sent: &[u8], back: &[u8]) -> Echo {
    match differing(sent, back) {
        0 => Echo::Intact,
        n => Echo::Changed(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_intact_only_when_every_byte_matches() {
        assert_eq!(compare(b"abc", b"abc"), Echo::Intact);
        assert_eq!(compare(b"abc", b"abd"), Echo::Changed(1));
    }
}
