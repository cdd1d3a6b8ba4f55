//! Throughput through an echoing peer: one thread sends a known byte stream for the duration, another reads
//! it back and checks every byte; the figure is the rate at which intact bytes came back.
//!
//! The rate is taken over the receiving side's span, from the end of its first read to its last: bytes
//! of the first read arrived before the span began and are left out, so the figure is exactly the
//! steady pace of the echo (a line's character rate), not diluted by the first byte's round trip. After
//! the sender stops, the reader waits until every byte is back, or nothing arrived for the timeout, or as
//! long again as the test ran (an echo slower than the bytes in flight, such as a device server whose line
//! is slower than the network, would otherwise drain for hours): the run ends in at most twice its
//! duration (plus the timeout when that is longer), with the missing bytes counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::throughput::{Flow, IntervalSample};
use linkperf_core::{Direction, HostFacts, ThroughputSpec};

use super::latency::DATAGRAM_HEADER_BYTES;
use super::payload::Payload;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::transport::echo_link::EchoLink;
use crate::NetError;

/// What the reading side saw.
#[derive(Debug, Default)]
struct Received {
    /// Bytes back, intact or not.
    bytes: u64,
    /// Intact bytes back after the first read (the bytes the rate is computed from).
    intact_in_span: u64,
    /// Bytes (or datagrams' bytes) that came back changed.
    changed: u64,
    /// From the end of the first read to the end of the last, in seconds.
    span_s: f64,
    /// The link failed or went quiet for the timeout before every byte was back.
    error: Option<NetError>,
    /// Bytes were still coming back, slowly, when the drain's time was up: not waited for.
    gave_up: bool,
    /// Each read: seconds since the run's epoch at its end, and the intact bytes it brought.
    arrivals: Vec<(f64, u64)>,
}

/// Sends to every echo at once for `spec.duration_s` in writes of the first size, and returns the rate of
/// intact bytes back: the sum first, then each link's when there are several. `bits_per_byte` is the
/// payload a byte carries (8 on a network link, the data bits on a serial line); once the senders stop, an
/// echo may fall silent for `timeout` before its run ends with the missing bytes counted. At most `window`
/// bytes are in flight per link (sent and not yet back): a serial line's buffers would otherwise fill with
/// seconds of data that must drain after the test.
pub fn run_echo_throughput(
    links: &mut [Box<dyn EchoLink>],
    spec: &ThroughputSpec,
    payload: Payload,
    bits_per_byte: u8,
    (timeout, window): (Duration, u64),
    observer: &dyn Observer,
) -> Result<MeasuredRun<ThroughputSeries>, NetError> {
    let size = spec.sizes_bytes.first().copied().unwrap_or(1024) as usize;
    if links.iter().any(|l| l.is_datagram()) && size < DATAGRAM_HEADER_BYTES {
        return Err(NetError::Invalid(format!(
            "a UDP echo test needs messages of at least {DATAGRAM_HEADER_BYTES} bytes (their sequence number)"
        )));
    }
    let mut readers = Vec::with_capacity(links.len());
    for link in links.iter() {
        readers.push(link.try_clone().map_err(|e| NetError::io("opening the echo link for reading", e))?);
    }
    observer.phase("echo throughput", (spec.duration_s * 1000.0) as u64, ProgressUnit::Milliseconds);
    let epoch = Instant::now();
    let outcomes: Vec<LinkOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = links
            .iter_mut()
            .zip(readers.iter_mut())
            .enumerate()
            .map(|(i, (link, reader))| {
                let shown: &dyn Observer = if i == 0 { observer } else { &crate::NoProgress };
                scope.spawn(move || {
                    measure_one(link.as_mut(), reader.as_mut(), (size, window, timeout, epoch), payload, spec, shown)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut run = MeasuredRun::new(HostFacts::default());
    let rate = |r: &Received| (r.span_s > 0.0).then(|| r.intact_in_span as f64 * f64::from(bits_per_byte) / r.span_s);
    let total = outcomes.iter().fold(Received::default(), |mut t, o| {
        t.bytes += o.received.bytes;
        t.changed += o.received.changed;
        t.span_s = t.span_s.max(o.received.span_s);
        t
    });
    let sum_bps = outcomes.iter().map(|o| rate(&o.received)).sum::<Option<f64>>();
    let sent_total = outcomes.iter().map(|o| o.sent).sum();
    let mut sum = series(spec, size, sent_total, &total, sum_bps);
    let all: Vec<(f64, u64)> = outcomes.iter().flat_map(|o| o.received.arrivals.iter().copied()).collect();
    sum.intervals = intervals(&all, spec.interval_s, bits_per_byte);
    sum.complete = outcomes.iter().all(|o| o.received.error.is_none() && o.send_error.is_none());
    run.series.push(sum);
    if outcomes.len() > 1 {
        for (i, o) in outcomes.iter().enumerate() {
            let mut one = series(spec, size, o.sent, &o.received, rate(&o.received));
            one.stream = Some(i as u16);
            run.series.push(one);
        }
    }
    run.series.iter().for_each(|s| observer.measured(Measurement::Throughput(s)));
    for (o, link) in outcomes.iter().zip(links.iter()) {
        let name = link.describe();
        if o.received.changed > 0 {
            run.warnings.push(format!(
                "{name}: {} bytes {}: counted, not in the rate",
                o.received.changed,
                super::CHANGED_WARNING
            ));
        }
        if o.received.gave_up {
            run.warnings.push(format!(
                "{name}: {} of the {} bytes sent were still coming back {:.1} s after the writes ended, and were not waited for: the echo is slower than the bytes in flight (on a serial line behind an echo service, give its --baud to size them to the line)",
                o.sent - o.received.bytes,
                o.sent,
                Duration::from_secs_f64(spec.duration_s).max(timeout).as_secs_f64()
            ));
        } else if o.received.bytes < o.sent {
            run.warnings.push(format!(
                "{name}: {} of the {} bytes sent never came back",
                o.sent - o.received.bytes,
                o.sent
            ));
        }
    }
    run.error = outcomes.into_iter().find_map(|o| o.send_error.or(o.received.error));
    Ok(run)
}

/// The intact payload back per interval of `interval_s` from the epoch, up to the last read (the last
/// interval may be shorter); each interval counts in the totals for the part of it between the first and
/// the last read of the run.
fn intervals(arrivals: &[(f64, u64)], interval_s: f64, bits_per_byte: u8) -> Vec<IntervalSample> {
    let first = arrivals.iter().map(|a| a.0).fold(f64::INFINITY, f64::min);
    let last = arrivals.iter().map(|a| a.0).fold(0.0, f64::max);
    if arrivals.is_empty() || interval_s <= 0.0 || last <= 0.0 {
        return Vec::new();
    }
    let count = (last / interval_s).ceil().max(1.0) as usize;
    let mut bytes = vec![0u64; count];
    for &(t, b) in arrivals {
        bytes[((t / interval_s) as usize).min(count - 1)] += b;
    }
    bytes
        .into_iter()
        .enumerate()
        .map(|(k, b)| {
            let start_s = k as f64 * interval_s;
            let end_s = (start_s + interval_s).min(last);
            let length = (end_s - start_s).max(f64::MIN_POSITIVE);
            IntervalSample {
                start_s,
                end_s,
                bytes: b,
                goodput_bps: b as f64 * f64::from(bits_per_byte) / length,
                in_total_s: (end_s.min(last) - start_s.max(first)).max(0.0),
            }
        })
        .collect()
}

/// One link's throughput run.
#[derive(Default)]
struct LinkOutcome {
    sent: u64,
    received: Received,
    send_error: Option<NetError>,
}

fn measure_one(
    link: &mut dyn EchoLink,
    reader: &mut dyn EchoLink,
    (size, window, timeout, epoch): (usize, u64, Duration, Instant),
    payload: Payload,
    spec: &ThroughputSpec,
    observer: &dyn Observer,
) -> LinkOutcome {
    let sent = AtomicU64::new(0);
    let back = AtomicU64::new(0);
    let sending = AtomicBool::new(true);
    let drain = timeout.max(Duration::from_secs_f64(spec.duration_s));
    let (send_error, received) = std::thread::scope(|scope| {
        let read = scope.spawn(|| receive(reader, payload, (&sent, &back), &sending, (timeout, drain, epoch)));
        let error = send(link, (size, window), payload, spec.duration_s, (&sent, &back), observer);
        sending.store(false, Ordering::Release);
        (error, read.join().unwrap_or_default())
    });
    LinkOutcome { sent: sent.load(Ordering::Acquire), received, send_error }
}

fn series(spec: &ThroughputSpec, size: usize, sent: u64, received: &Received, bps: Option<f64>) -> ThroughputSeries {
    ThroughputSeries {
        phase: Direction::Upload,
        size_bytes: size as u64,
        flow: Flow::Upload,
        stream: None,
        receiver_bps: bps,
        sender_bps: None,
        receiver_bytes: received.bytes - received.changed,
        sender_bytes: sent,
        window_s: received.span_s,
        messages_per_s: bps.map(|b| b / 8.0 / size as f64),
        us_per_message: bps.filter(|&b| b > 0.0).map(|b| size as f64 * 8.0 / b * 1e6),
        intervals: Vec::new(),
        tcp: None,
        udp: None,
        sender_cpu: None,
        receiver_cpu: None,
        link: None,
        client_counters: None,
        responder_counters: None,
        turns: Vec::new(),
        complete: received.error.is_none() && spec.duration_s > 0.0,
    }
}

/// Writes the payload stream for `duration_s`; returns what stopped it early.
fn send(
    link: &mut dyn EchoLink,
    (size, window): (usize, u64),
    payload: Payload,
    duration_s: f64,
    (sent, back): (&AtomicU64, &AtomicU64),
    observer: &dyn Observer,
) -> Option<NetError> {
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(duration_s);
    let mut buffer = vec![0u8; size];
    let (mut offset, mut sequence, mut reported) = (0u64, 0u64, 0u64);
    while Instant::now() < end {
        // Datagrams are lost rather than queued, so only a stream's bytes are held to the window.
        if !link.is_datagram() && offset + size as u64 > back.load(Ordering::Acquire) + window.max(size as u64) {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        if link.is_datagram() {
            sequence += 1;
            payload.fill(sequence, 0, &mut buffer);
            buffer[..DATAGRAM_HEADER_BYTES].copy_from_slice(&sequence.to_le_bytes());
        } else {
            payload.fill(0, offset, &mut buffer);
        }
        // A write that the echo does not take in time is cut there (what was written counts), so that the
        // end of the test and Ctrl-C are seen within a fifth of a second however slow the echo.
        match link.send_until(&buffer, end.min(Instant::now() + Duration::from_millis(200))) {
            Ok(written) => offset += written as u64,
            Err(e) => return Some(NetError::io(format!("sending to the echo over {}", link.describe()), e)),
        }
        sent.store(offset, Ordering::Release);
        let elapsed = start.elapsed().as_millis() as u64;
        if elapsed >= reported + 100 {
            observer.advance(elapsed - reported);
            reported = elapsed;
            if observer.cancelled() {
                return Some(NetError::Interrupted);
            }
        }
    }
    None
}

/// Reads and checks the echo until every byte sent is back, or nothing came for `timeout`, or `drain` has
/// passed since the sender stopped.
fn receive(
    link: &mut dyn EchoLink,
    payload: Payload,
    (sent, back): (&AtomicU64, &AtomicU64),
    sending: &AtomicBool,
    (timeout, drain, epoch): (Duration, Duration, Instant),
) -> Received {
    let mut out = Received::default();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut first_read_end: Option<Instant> = None;
    let mut last = Instant::now();
    let mut stopped: Option<Instant> = None;
    loop {
        if !sending.load(Ordering::Acquire) {
            if out.bytes >= sent.load(Ordering::Acquire) {
                break;
            }
            if stopped.get_or_insert_with(Instant::now).elapsed() >= drain {
                out.gave_up = true;
                break;
            }
        }
        let n = match link.receive(&mut buffer, Duration::from_millis(50)) {
            Ok(n) => n,
            Err(e) => {
                out.error = Some(NetError::io(format!("reading the echo over {}", link.describe()), e));
                break;
            }
        };
        let now = Instant::now();
        if n == 0 {
            if !sending.load(Ordering::Acquire) && now.duration_since(last) >= timeout {
                out.error = Some(NetError::Timeout {
                    what: format!("the rest of the echo over {}", link.describe()),
                    timeout_s: timeout.as_secs_f64(),
                });
                break;
            }
            continue;
        }
        let changed = check(link.is_datagram(), payload, out.bytes, &buffer[..n]);
        out.bytes += n as u64;
        back.store(out.bytes, Ordering::Release);
        out.changed += changed;
        last = now;
        out.arrivals.push((now.duration_since(epoch).as_secs_f64(), n as u64 - changed));
        match first_read_end {
            None => first_read_end = Some(now),
            Some(first) => {
                out.intact_in_span += n as u64 - changed;
                out.span_s = now.duration_since(first).as_secs_f64();
            }
        }
    }
    out
}

/// Changed bytes in a read of the stream at `offset`, or in one datagram.
fn check(datagram: bool, payload: Payload, offset: u64, read: &[u8]) -> u64 {
    if !datagram {
        return payload.differing(0, offset, read);
    }
    if read.len() < DATAGRAM_HEADER_BYTES {
        return read.len() as u64;
    }
    let mut tag = [0u8; DATAGRAM_HEADER_BYTES];
    tag.copy_from_slice(&read[..DATAGRAM_HEADER_BYTES]);
    let sequence = u64::from_le_bytes(tag);
    payload.differing(sequence, DATAGRAM_HEADER_BYTES as u64, &read[DATAGRAM_HEADER_BYTES..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_binned_into_intervals_from_the_epoch_and_the_last_one_is_cut_at_the_last_read() {
        // 100 bytes at 0.5 s, 200 at 1.5 s, 50 at 2.25 s; 1-second intervals of 8-bit bytes.
        let samples = intervals(&[(0.5, 100), (1.5, 200), (2.25, 50)], 1.0, 8);
        assert_eq!(samples.len(), 3);
        assert_eq!(samples.iter().map(|s| s.bytes).collect::<Vec<_>>(), vec![100, 200, 50]);
        assert_eq!(samples[1].goodput_bps, 1600.0);
        assert_eq!((samples[2].end_s, samples[2].goodput_bps), (2.25, 50.0 * 8.0 / 0.25));
        assert_eq!(samples[0].in_total_s, 0.5, "the run's window starts at the first read");
    }
}
