//! The trend of a UDP stream's relative one-way delay: whether a queue grew while the stream ran, by how
//! much, and the rate at which datagrams arrived (docs/metrics.md, "Delay growth").
//!
//! Every throughput datagram carries its send time, `sent_ns`, on the sender's clock modulo 2^32 ns (the
//! wire layout of `proto::probe` is fixed). The receiver subtracts it from its own receive time: the result
//! is the one-way delay plus an unknown, constant offset between the clocks, so only its change over a
//! trial means anything. A growing delay is a growing queue ahead of the receiver; growth times the arrival
//! rate is the size of that queue.
//!
//! The estimator is robust to jitter: it keeps the smallest relative delay of each slot of receive time (a
//! tenth of a reporting interval), the floor under cross traffic, batching and scheduling noise, and fits a
//! line through these minima with the Theil-Sen estimator (the median of the slopes between every pair of
//! points; Sen 1968), which ignores up to 29 % of outliers. It is guarded against the drift of two
//! unsynchronised clocks: growth slower than [`SLEW_GUARD_US_PER_S`] is never taken for a queue.
//!
//! Pure: times are passed in. What it does not do: tell an absolute one-way delay (the clocks' offset is
//! unknown), or see a queue that was already full when the stream started.

use serde::{Deserialize, Serialize};

/// Growth of the relative delay, in microseconds per second, below which it may be the drift between two
/// hosts' clocks rather than a queue: twice the 500 ppm that NTP daemons (ntpd, chronyd) slew a clock at
/// most. A stream offered within 0.1 % of a link's capacity is therefore never judged to build a queue.
pub const SLEW_GUARD_US_PER_S: f64 = 1_000.0;
/// Smallest slot of receive time over which the minimum delay is kept.
const MIN_SLOT_NS: u64 = 1_000_000;
/// Slots per reporting interval.
const SLOTS_PER_INTERVAL: u64 = 10;
/// Most points a Theil-Sen fit uses (longer series are thinned by merging neighbouring slots): its cost
/// grows with the square of the points.
const MAX_FIT_POINTS: usize = 256;
/// Whole datagram times of delay that a growth must add up to over a trial to count: a paced stream at a
/// link's capacity holds up to one datagram in the queue, and its arrival times are quantised by datagrams.
const GRANULARITY_DATAGRAMS: f64 = 2.0;

/// The delay trend of one stream over a trial, and of each reporting interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayTrend {
    /// Growth of the relative one-way delay over the trial: the Theil-Sen slope of its per-slot minima
    /// against receive time, in microseconds of delay per second (1000 us/s: the delay grows by 0.1 % of
    /// the time elapsed; negative when a queue drains).
    pub growth_us_per_s: f64,
    /// The delay gained over the trial at that slope (`growth x span`), in microseconds.
    pub rise_us: f64,
    /// The queue that rise implies: `rise x arrival rate`, in bytes of payload.
    pub queue_bytes: f64,
    /// Payload rate of arrivals from the first datagram to the last, in bits per second (the first
    /// datagram's bytes left out: they arrived at the start of the span).
    pub arrival_bps: f64,
    /// Seconds from the first arrival to the last.
    pub span_s: f64,
    /// Whether growth was measured: arrivals fell in at least three slots of receive time (a tenth of an
    /// interval each). Without, the growth figures are zero and say nothing.
    #[serde(default)]
    pub growth_measured: bool,
    /// Whether a queue grew: the growth exceeds [`SLEW_GUARD_US_PER_S`], and the rise exceeds two datagram
    /// times at the arrival rate.
    pub growing: bool,
    /// The same per reporting interval (intervals with fewer than three slots of arrivals are left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalDelay>,
}

/// The delay trend of one reporting interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntervalDelay {
    /// Start of the interval, seconds from the first arrival of the test (as the throughput intervals).
    pub start_s: f64,
    /// Growth of the relative delay within the interval, microseconds per second.
    pub growth_us_per_s: f64,
    /// The queue that growth built within the interval at the interval's arrival rate, bytes of payload.
    pub queue_bytes: f64,
}

impl DelayTrend {
    /// The trend of several streams sharing a path: the largest growth, queues and arrival rates summed,
    /// growing if any grows; intervals alike by their start. `None` without any.
    pub fn sum<'a>(trends: impl IntoIterator<Item = &'a DelayTrend>) -> Option<DelayTrend> {
        let mut trends = trends.into_iter();
        let mut sum = trends.next()?.clone();
        for trend in trends {
            sum.growth_us_per_s = sum.growth_us_per_s.max(trend.growth_us_per_s);
            sum.rise_us = sum.rise_us.max(trend.rise_us);
            sum.queue_bytes += trend.queue_bytes;
            sum.arrival_bps += trend.arrival_bps;
            sum.span_s = sum.span_s.max(trend.span_s);
            sum.growing |= trend.growing;
            sum.growth_measured &= trend.growth_measured;
            for interval in &trend.intervals {
                match sum.intervals.iter_mut().find(|i| i.start_s == interval.start_s) {
                    Some(i) => {
                        i.growth_us_per_s = i.growth_us_per_s.max(interval.growth_us_per_s);
                        i.queue_bytes += interval.queue_bytes;
                    }
                    None => sum.intervals.push(*interval),
                }
            }
        }
        sum.intervals.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        Some(sum)
    }
}

/// The smallest relative delay and the bytes of one slot of receive time.
#[derive(Debug, Clone, Copy)]
struct Slot {
    index: u64,
    min_delay_ns: i64,
    bytes: u64,
}

/// Collects a stream's relative delays as its datagrams arrive.
#[derive(Debug, Clone)]
pub struct DelayTracker {
    slot_ns: u64,
    interval_ns: u64,
    /// The last datagram's send time unwrapped to 64 bits, its raw 32-bit value, and its receive time.
    last: Option<(i64, u32, u64)>,
    first: Option<(u64, u64)>,
    last_received_ns: u64,
    bytes: u64,
    size: u64,
    slots: Vec<Slot>,
}

impl DelayTracker {
    /// A tracker for a stream reported every `interval_ns`.
    pub fn new(interval_ns: u64) -> Self {
        let interval_ns = interval_ns.max(1);
        Self {
            slot_ns: (interval_ns / SLOTS_PER_INTERVAL).max(MIN_SLOT_NS),
            interval_ns,
            last: None,
            first: None,
            last_received_ns: 0,
            bytes: 0,
            size: 0,
            slots: Vec::new(),
        }
    }

    /// Records a datagram of `bytes` sent at `sent_ns` (sender's clock modulo 2^32) and received at
    /// `received_ns` (receiver's clock, not decreasing).
    pub fn record(&mut self, sent_ns: u32, received_ns: u64, bytes: u64) {
        let sent = self.unwrap(sent_ns, received_ns);
        let delay = received_ns as i64 - sent;
        self.first.get_or_insert((received_ns, bytes));
        self.last_received_ns = self.last_received_ns.max(received_ns);
        self.bytes += bytes;
        self.size = self.size.max(bytes);
        let index = received_ns / self.slot_ns;
        match self.slots.last_mut() {
            Some(slot) if slot.index == index => {
                slot.min_delay_ns = slot.min_delay_ns.min(delay);
                slot.bytes += bytes;
            }
            _ => self.slots.push(Slot { index, min_delay_ns: delay, bytes }),
        }
    }

    /// The send time unwrapped to 64 bits: of the values congruent to `raw` modulo 2^32, the one nearest
    /// to the last send time plus the receive time elapsed since (the delay changes far less than 2^31 ns,
    /// 2.1 s, between two datagrams; order and gaps of any length are then resolved).
    fn unwrap(&mut self, raw: u32, received_ns: u64) -> i64 {
        const WRAP: i64 = 1 << 32;
        let sent = match self.last {
            None => i64::from(raw),
            Some((last_sent, last_raw, last_received)) => {
                let expected = last_sent + (received_ns as i64 - last_received as i64);
                let forward = last_sent + i64::from(raw.wrapping_sub(last_raw));
                let turns = (expected - forward + WRAP / 2).div_euclid(WRAP);
                forward + turns * WRAP
            }
        };
        self.last = Some((sent, raw, received_ns));
        sent
    }

    /// The trend so far; `None` until two datagrams arrived at different times. Growth is measured once
    /// three slots of receive time hold arrivals (`growth_measured`); the arrival rate before that.
    pub fn trend(&self) -> Option<DelayTrend> {
        let (first_ns, first_bytes) = self.first?;
        let span_s = (self.last_received_ns - first_ns) as f64 / 1e9;
        if span_s <= 0.0 {
            return None;
        }
        let arrival_bps = (self.bytes - first_bytes) as f64 * 8.0 / span_s;
        let growth = if self.slots.len() >= 3 { theil_sen(&self.points(&self.slots)) } else { None };
        let growth_us_per_s = growth.unwrap_or(0.0);
        let rise_us = growth_us_per_s * span_s;
        let datagram_us = if arrival_bps > 0.0 { self.size as f64 * 8.0 / arrival_bps * 1e6 } else { f64::INFINITY };
        Some(DelayTrend {
            growth_us_per_s,
            rise_us,
            queue_bytes: rise_us / 1e6 * arrival_bps / 8.0,
            arrival_bps,
            span_s,
            growth_measured: growth.is_some(),
            growing: growth_us_per_s > SLEW_GUARD_US_PER_S && rise_us > GRANULARITY_DATAGRAMS * datagram_us,
            intervals: self.intervals(),
        })
    }

    /// The trend of each reporting interval (on the receiver's clock, as its throughput intervals) with at
    /// least three slots of arrivals.
    fn intervals(&self) -> Vec<IntervalDelay> {
        let mut intervals = Vec::new();
        let interval_of = |slot: &Slot| slot.index * self.slot_ns / self.interval_ns;
        let mut rest = &self.slots[..];
        while let Some(head) = rest.first() {
            let k = interval_of(head);
            let length = rest.iter().take_while(|s| interval_of(s) == k).count();
            let (slots, tail) = rest.split_at(length);
            rest = tail;
            if slots.len() < 3 {
                continue;
            }
            let Some(growth) = theil_sen(&self.points(slots)) else { continue };
            let bytes: u64 = slots.iter().map(|s| s.bytes).sum();
            let seconds = self.interval_ns as f64 / 1e9;
            intervals.push(IntervalDelay {
                start_s: k as f64 * seconds,
                growth_us_per_s: growth,
                // The rise over the interval (growth x seconds) at its arrival rate (bytes / seconds).
                queue_bytes: growth / 1e6 * bytes as f64,
            });
        }
        intervals
    }

    /// (seconds, microseconds) points of the slots' minima, thinned to at most [`MAX_FIT_POINTS`].
    fn points(&self, slots: &[Slot]) -> Vec<(f64, f64)> {
        let merge = slots.len().div_ceil(MAX_FIT_POINTS).max(1);
        slots
            .chunks(merge)
            .map(|chunk| {
                let x = chunk.iter().map(|s| (s.index as f64 + 0.5) * self.slot_ns as f64 / 1e9).sum::<f64>();
                let y = chunk.iter().map(|s| s.min_delay_ns).min().unwrap_or(0);
                (x / chunk.len() as f64, y as f64 / 1e3)
            })
            .collect()
    }
}

/// The Theil-Sen slope of `points`: the median of the slopes between every pair with distinct x; `None`
/// with fewer than two such points.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<f64> {
    let mut slopes = Vec::with_capacity(points.len() * points.len().saturating_sub(1) / 2);
    for (i, &(x1, y1)) in points.iter().enumerate() {
        for &(x2, y2) in &points[i + 1..] {
            if x2 != x1 {
                slopes.push((y2 - y1) / (x2 - x1));
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let middle = slopes.len() / 2;
    Some(if slopes.len() % 2 == 1 { slopes[middle] } else { (slopes[middle - 1] + slopes[middle]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A stream of `count` datagrams of 1000 bytes, one every `gap_ns`, whose delay after datagram k is
    /// `delay(k)` nanoseconds, seen by a receiver whose clock is `offset_ns` ahead (wrapping the send clock).
    fn stream(count: u64, gap_ns: u64, offset_ns: u64, delay: impl Fn(u64) -> u64) -> DelayTracker {
        let mut tracker = DelayTracker::new(1_000 * MS);
        for k in 0..count {
            let sent = offset_ns + k * gap_ns;
            tracker.record(sent as u32, k * gap_ns + delay(k), 1000);
        }
        tracker
    }

    #[test]
    fn a_constant_delay_does_not_grow() {
        let trend = stream(2000, MS, 7 * MS, |_| 3 * MS).trend().expect("a trend");
        assert_eq!(trend.growth_us_per_s, 0.0);
        assert!(!trend.growing);
        // 1999 datagrams of 8000 bits after the first, over 1.999 s.
        assert!((trend.arrival_bps - 8e6).abs() < 1.0, "{}", trend.arrival_bps);
        assert_eq!(trend.intervals.len(), 2);
    }

    #[test]
    fn a_queue_growing_at_a_known_rate_is_measured_exactly() {
        // Offered 2 % above a link's capacity: each datagram waits 0.02 ms longer than the one before, and
        // they arrive 1.02 ms apart, so the delay grows by 0.02 / 1.02 of the receive time: 19 608 us/s.
        // The 32-bit send clock wraps (at 4.29 s) in the middle of the stream.
        let start = (1u64 << 32) - 1_000 * MS;
        let tracker = stream(2000, MS, start, |k| k * MS / 50);
        let trend = tracker.trend().expect("a trend");
        let expected_growth = 0.02 / 1.02 * 1e6;
        // Within 0.5 %: a slot's first arrival is not exactly at its start.
        assert!((trend.growth_us_per_s - expected_growth).abs() < expected_growth * 0.005, "{trend:?}");
        assert!(trend.growing);
        // The last datagram waited 39.98 ms: at the arrival rate, that is the queue ahead of it.
        let expected = 0.03998 * trend.arrival_bps / 8.0;
        assert!((trend.queue_bytes - expected).abs() / expected < 0.005, "{} vs {expected}", trend.queue_bytes);
        assert_eq!(trend.intervals.len(), 2);
        for interval in &trend.intervals {
            assert!((interval.growth_us_per_s - expected_growth).abs() < expected_growth * 0.005, "{interval:?}");
        }
    }

    #[test]
    fn jitter_and_outliers_do_not_make_growth() {
        // Every datagram delayed by up to 5 ms of noise, one in five by 40 ms more: the floor is flat.
        let noise = |k: u64| (k * 7919 % 5000) * 1000 + if k % 5 == 0 { 40 * MS } else { 0 };
        let trend = stream(3000, MS, 0, noise).trend().expect("a trend");
        assert!(trend.growth_us_per_s.abs() < SLEW_GUARD_US_PER_S, "{trend:?}");
        assert!(!trend.growing);
    }

    #[test]
    fn clock_drift_within_the_guard_is_not_a_queue() {
        // The receiver's clock gains 500 ppm on the sender's: 500 us per second of apparent growth (499.75
        // per second of the receiver's clock).
        let trend = stream(4000, MS, 0, |k| k * MS / 2000).trend().expect("a trend");
        assert!((trend.growth_us_per_s - 500.0).abs() < 1.0, "{trend:?}");
        assert!(!trend.growing, "drift is not a queue");
    }

    #[test]
    fn unwrapping_survives_gaps_longer_than_the_wrap_and_reordering() {
        let mut tracker = DelayTracker::new(1_000 * MS);
        // Datagrams 10 s apart (more than two wraps), then two swapped: delays 5 ms throughout.
        let sends = [0u64, 10_000 * MS, 20_000 * MS, 20_002 * MS, 20_001 * MS, 30_000 * MS];
        for sent in sends {
            tracker.record(sent as u32, sent + 5 * MS, 100);
        }
        let trend = tracker.trend().expect("a trend");
        assert_eq!(trend.growth_us_per_s, 0.0, "{trend:?}");
    }

    #[test]
    fn theil_sen_is_the_median_pairwise_slope() {
        // Ten pairs: six of slope 2, four through the outlier.
        assert_eq!(theil_sen(&[(0.0, 0.0), (1.0, 2.0), (2.0, 4.0), (3.0, 6.0), (4.0, 100.0)]), Some(2.0));
        assert_eq!(theil_sen(&[(0.0, 1.0)]), None);
        assert_eq!(theil_sen(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }
}
