//! `DatagramTracker`: what a UDP receiver learns from sequence numbers and send times: datagrams received,
//! out of order, duplicated, and the interarrival jitter of RFC 3550 (section 6.4.1, appendix A.8).
//!
//! The trend of the relative one-way delay is kept by a [`DelayTracker`] beside the counts.
//!
//! Times are passed in (nanoseconds on the receiver's clock; the sender's clock only as differences), so this
//! is pure and tested with known answers. Loss is not decided here: it needs the sender's count, and is
//! computed from both ends' figures by [`UdpStats::lost`].

use serde::{Deserialize, Serialize};

use crate::delay_trend::DelayTracker;

/// How many sequence numbers behind the highest one a duplicate is still recognised.
const WINDOW: u64 = 1 << 16;

/// UDP figures of one stream end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpStats {
    /// Datagrams sent (sender) or received (receiver, duplicates included).
    pub datagrams: u64,
    /// Receiver: datagrams that arrived after one with a higher sequence number.
    pub out_of_order: u64,
    /// Receiver: datagrams whose sequence number had already arrived.
    pub duplicates: u64,
    /// Receiver: RFC 3550 interarrival jitter at the end, in microseconds.
    pub jitter_us: f64,
    /// Sender: times the schedule fell more than its slack behind and was re-anchored instead of bursting.
    pub stalls: u64,
    /// Receiver: datagrams the kernel dropped because this socket's buffer was full (`SO_RXQ_OVFL`).
    #[serde(default)]
    pub socket_drops: u64,
    /// Sender: datagrams handed to the kernel per send call, on average (GSO batches).
    #[serde(default)]
    pub datagrams_per_call: f64,
    /// Sender: datagrams the sending host's own stack dropped (its queue was full: `ENOBUFS` on the send
    /// call, counted for every datagram of the call, however many a GSO batch held). Included in `datagrams`.
    #[serde(default)]
    pub send_drops: u64,
    /// Receiver: the trend of the relative one-way delay (`None` from an older peer, or with too few
    /// arrivals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<crate::delay_trend::DelayTrend>,
    /// Receiver: the highest sequence number received (`None`: nothing received, or an older peer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_sequence: Option<u64>,
}

impl UdpStats {
    /// Datagrams lost between a sender and a receiver: sent minus distinct received, never negative, and
    /// never above what was sent, whatever arrived late or twice.
    pub fn lost(sender: &UdpStats, receiver: &UdpStats) -> u64 {
        let distinct = receiver.datagrams.saturating_sub(receiver.duplicates);
        sender.datagrams.saturating_sub(distinct)
    }

    /// Datagrams lost of a run stopped early: only those numbered below the highest one received count,
    /// as the ones after it may still have been on their way when the receiver stopped (it stops before
    /// the sender). Without the highest number (an older peer), as [`UdpStats::lost`].
    pub fn lost_before_stop(sender: &UdpStats, receiver: &UdpStats) -> u64 {
        let Some(highest) = receiver.highest_sequence else { return Self::lost(sender, receiver) };
        let seen = UdpStats { datagrams: sender.datagrams.min(highest.saturating_add(1)), ..UdpStats::default() };
        Self::lost(&seen, receiver)
    }

    /// `lost` as a percentage of sent, in 0..=100; `None` if nothing was sent.
    pub fn loss_percent(sender: &UdpStats, receiver: &UdpStats) -> Option<f64> {
        (sender.datagrams > 0).then(|| UdpStats::lost(sender, receiver) as f64 * 100.0 / sender.datagrams as f64)
    }
}

/// Tracks the datagrams of one stream at its receiver.
#[derive(Debug, Clone)]
pub struct DatagramTracker {
    stats: UdpStats,
    delay: DelayTracker,
    highest: Option<u64>,
    /// A ring of WINDOW bits: bit `s % WINDOW` is set when sequence number `s`, within WINDOW of the
    /// highest, has arrived. Advancing clears the bits of the numbers passed over, so each datagram costs
    /// O(1) however large the window.
    seen: Vec<u64>,
    last_transit: Option<i64>,
    jitter_ns: f64,
}

impl DatagramTracker {
    /// A tracker with nothing received, for a stream reported every `interval_ns`.
    pub fn new(interval_ns: u64) -> Self {
        Self {
            stats: UdpStats::default(),
            delay: DelayTracker::new(interval_ns),
            highest: None,
            seen: vec![0; (WINDOW / 64) as usize],
            last_transit: None,
            jitter_ns: 0.0,
        }
    }

    /// Records a datagram of `bytes` with sequence number `sequence`, sent at `sent_ns` (sender's clock,
    /// wrapping at 2^32 ns) and received at `received_ns` (receiver's clock).
    pub fn record(&mut self, sequence: u64, sent_ns: u32, received_ns: u64, bytes: u64) {
        self.stats.datagrams += 1;
        self.delay.record(sent_ns, received_ns, bytes);
        match self.highest {
            Some(highest) if sequence <= highest => self.record_old(sequence, highest - sequence),
            _ => self.advance_to(sequence),
        }
        self.update_jitter(sent_ns, received_ns);
    }

    /// The figures so far.
    pub fn stats(&self) -> UdpStats {
        UdpStats {
            jitter_us: self.jitter_ns / 1_000.0,
            delay: self.delay.trend(),
            highest_sequence: self.highest,
            ..self.stats.clone()
        }
    }

    fn record_old(&mut self, sequence: u64, behind: u64) {
        if behind >= WINDOW {
            // Too old to tell a duplicate from a late arrival: count it as out of order.
            self.stats.out_of_order += 1;
        } else if self.test_and_set(sequence) {
            self.stats.duplicates += 1;
        } else {
            self.stats.out_of_order += 1;
        }
    }

    fn advance_to(&mut self, sequence: u64) {
        match self.highest {
            Some(highest) if sequence - highest < WINDOW => {
                for passed in highest + 1..sequence {
                    self.clear(passed);
                }
            }
            _ => self.seen.iter_mut().for_each(|w| *w = 0),
        }
        self.highest = Some(sequence);
        self.clear(sequence);
        self.test_and_set(sequence);
    }

    fn slot(sequence: u64) -> (usize, u64) {
        let bit = sequence % WINDOW;
        ((bit / 64) as usize, 1 << (bit % 64))
    }

    fn clear(&mut self, sequence: u64) {
        let (word, mask) = Self::slot(sequence);
        self.seen[word] &= !mask;
    }

    /// Marks `sequence` as seen; returns whether it already was.
    fn test_and_set(&mut self, sequence: u64) -> bool {
        let (word, mask) = Self::slot(sequence);
        let was = self.seen[word] & mask != 0;
        self.seen[word] |= mask;
        was
    }

    /// RFC 3550: D = (Rj - Ri) - (Sj - Si) between consecutive arrivals, J += (|D| - J) / 16.
    fn update_jitter(&mut self, sent_ns: u32, received_ns: u64) {
        // Transit on mixed clocks; only its differences matter. The send clock wraps at 2^32 ns, so its
        // differences are taken modulo 2^32 (exact for datagrams sent less than 2.1 s apart).
        let transit = received_ns as i64 - i64::from(sent_ns);
        if let Some(last) = self.last_transit {
            let d = i64::from((transit - last) as i32);
            self.jitter_ns += (d.unsigned_abs() as f64 - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(sequences: &[u64]) -> UdpStats {
        let mut t = DatagramTracker::new(1_000_000_000);
        sequences.iter().for_each(|&s| t.record(s, (s * 1000) as u32, s * 1000, 100));
        t.stats()
    }

    #[test]
    fn a_run_stopped_early_counts_as_lost_only_what_was_passed_over() {
        // 10 sent; 0-5 arrived but 3; 6-9 were still on their way when the receiver stopped.
        let received = track(&[0, 1, 2, 4, 5]);
        assert_eq!(received.highest_sequence, Some(5));
        let sent = UdpStats { datagrams: 10, ..UdpStats::default() };
        assert_eq!(UdpStats::lost(&sent, &received), 5);
        assert_eq!(UdpStats::lost_before_stop(&sent, &received), 1);
        let older = UdpStats { highest_sequence: None, ..received };
        assert_eq!(UdpStats::lost_before_stop(&sent, &older), 5, "without the highest number, as before");
    }

    #[test]
    fn in_order_arrivals_are_clean() {
        let s = track(&[0, 1, 2, 3, 4]);
        assert_eq!((s.datagrams, s.out_of_order, s.duplicates), (5, 0, 0));
        assert_eq!(s.jitter_us, 0.0, "constant transit time has no jitter");
    }

    #[test]
    fn reordering_and_duplicates_are_told_apart() {
        let s = track(&[0, 2, 1, 3, 3, 1, 200, 150, 150]);
        assert_eq!(s.datagrams, 9);
        assert_eq!(s.out_of_order, 2, "1 after 2, 150 after 200");
        assert_eq!(s.duplicates, 3, "the second 3, the second 1, the second 150");
    }

    #[test]
    fn duplicates_are_found_across_window_words() {
        let s = track(&[0, 63, 64, 65, 127, 128, 1000, 64, 937, 937]);
        assert_eq!(s.duplicates, 2, "64 again, 937 again");
        assert_eq!(s.out_of_order, 1, "937 after 1000");
    }

    #[test]
    fn the_ring_forgets_numbers_it_has_passed() {
        // 5 arrives, then the window moves a whole lap: a second 5 + WINDOW is new, not a duplicate of 5.
        let s = track(&[5, 6, 5 + WINDOW, 6 + WINDOW, 5 + WINDOW]);
        assert_eq!((s.duplicates, s.out_of_order), (1, 0));
        // Gaps smaller than the window clear the numbers skipped.
        let s = track(&[0, 1, 70_000, 70_001, 69_999, 69_999]);
        assert_eq!((s.duplicates, s.out_of_order), (1, 1));
    }

    #[test]
    fn very_old_arrivals_count_as_out_of_order() {
        let s = track(&[0, WINDOW + 10, 0]);
        assert_eq!((s.out_of_order, s.duplicates), (1, 0));
    }

    #[test]
    fn loss_is_never_negative_nor_above_what_was_sent() {
        let sender = UdpStats { datagrams: 10, ..UdpStats::default() };
        let all_twice = UdpStats { datagrams: 20, duplicates: 10, ..UdpStats::default() };
        assert_eq!(UdpStats::lost(&sender, &all_twice), 0);
        let some = UdpStats { datagrams: 7, duplicates: 1, ..UdpStats::default() };
        assert_eq!(UdpStats::lost(&sender, &some), 4);
        assert_eq!(UdpStats::loss_percent(&sender, &some), Some(40.0));
        let more_than_sent = UdpStats { datagrams: 15, ..UdpStats::default() };
        assert_eq!(UdpStats::lost(&sender, &more_than_sent), 0);
        assert_eq!(UdpStats::loss_percent(&UdpStats::default(), &some), None);
    }

    #[test]
    fn jitter_follows_the_rfc_3550_estimator() {
        // Transit times 0, 16, 0 us: |D| = 16 us twice. J1 = 16/16 = 1 us; J2 = 1 + (16 - 1)/16 = 1.9375 us.
        let mut t = DatagramTracker::new(1_000_000_000);
        t.record(0, 0, 1_000_000, 100);
        t.record(1, 1_000_000, 2_016_000, 100);
        t.record(2, 2_000_000, 3_000_000, 100);
        assert!((t.stats().jitter_us - 1.9375).abs() < 1e-9, "{}", t.stats().jitter_us);
    }

    #[test]
    fn jitter_survives_the_send_clock_wrapping() {
        let mut t = DatagramTracker::new(1_000_000_000);
        t.record(0, u32::MAX - 499, 10_000, 100);
        t.record(1, 500, 11_000, 100);
        assert_eq!(t.stats().jitter_us, 0.0, "1000 ns apart on both clocks");
    }
}
