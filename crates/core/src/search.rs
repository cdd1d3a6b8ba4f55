//! The searches of RFC 2544, without I/O and without results: the `BinarySearch` over offered rates
//! (section 26.1), the `RateSearch` beside it that finds the sustainable rate and the capacity in the same
//! trials, and the `LengthSearch` over burst lengths (section 26.4), with the `Verdict` a trial feeds them.
//! They depend on nothing: what a trial's rows say (`Verdict::of`) and what a search found (`ZeroLossRate`,
//! `BurstResult`) live in `rate_search`, so the arrows run from the results to the searches, not back.

use serde::{Deserialize, Serialize};

/// What a trial showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Loss within the tolerance, at the offered rate.
    Pass,
    /// More loss than the tolerance.
    Loss,
    /// The sender could not offer the rate (it sent fewer datagrams than its schedule held, beyond the
    /// tolerance; see `rate_search::sender_fell_short`) and nothing was lost: the rate is not reached, and the trial
    /// shows only that the link carried what the sender did send.
    SenderLimited,
    /// Nothing was received, or the trial was cut short.
    Failed,
}

impl Verdict {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Loss => "loss",
            Verdict::SenderLimited => "sender-limited",
            Verdict::Failed => "failed",
        }
    }
}

/// What one trial of a rate search showed: its verdict, whether a queue grew, and what the receiver saw
/// arrive when the offered rate was more than the path carried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrialOutcome {
    /// The verdict on loss.
    pub verdict: Verdict,
    /// Whether the relative one-way delay grew (`None`: not known, e.g. from an older responder).
    pub growing: Option<bool>,
    /// The arrival rate at the receiver, bits per second of payload: the path's capacity when the trial
    /// lost datagrams or grew a queue (the bottleneck then sends without pause).
    pub arrival_bps: Option<f64>,
    /// The rate the sender achieved, bits per second of payload (of the slowest flow).
    pub sent_bps: Option<f64>,
}

impl TrialOutcome {
    /// Whether the trial offered more than the path carried: it lost datagrams or grew a queue.
    pub fn over_capacity(&self) -> bool {
        matches!(self.verdict, Verdict::Loss) || (self.verdict == Verdict::Pass && self.growing == Some(true))
    }

    /// Whether the rate held: no loss beyond the tolerance and no queue growth.
    pub fn sustained(&self) -> bool {
        self.verdict == Verdict::Pass && self.growing == Some(false)
    }
}

/// The search of a rate search: the RFC 2544 zero-loss rate by a [`BinarySearch`], and beside it, in the
/// same trials, the sustainable rate (the highest that passed without queue growth). Once a trial offered
/// more than the path carried, its arrival rate estimates the capacity, and one trial just below that
/// estimate (by half the precision) is tried; it lies inside the zero-loss search's range as a rule and
/// narrows it too, so the two figures cost at most one trial more than the zero-loss rate alone.
#[derive(Debug, Clone)]
pub struct RateSearch {
    zero_loss: BinarySearch,
    precision: f64,
    sustained: Option<f64>,
    /// The lowest rate that lost or grew a queue.
    unsustained: Option<f64>,
    /// The capacity estimate and the offered rate of the trial it came from.
    capacity: Option<(f64, f64)>,
    hinted: bool,
    trials: u32,
    max_trials: u32,
}

impl RateSearch {
    /// A search between `min_bps` and `max_bps` to `precision`, as [`BinarySearch::new`].
    pub fn new(min_bps: f64, max_bps: f64, precision: f64) -> Self {
        Self {
            zero_loss: BinarySearch::new(min_bps, max_bps, precision),
            precision,
            sustained: None,
            unsustained: None,
            capacity: None,
            hinted: false,
            trials: 0,
            max_trials: Self::max_trials(min_bps, max_bps, precision),
        }
    }

    /// The most trials a search can take: the zero-loss search's, and the trial at the capacity estimate.
    pub fn max_trials(min_bps: f64, max_bps: f64, precision: f64) -> u32 {
        BinarySearch::max_trials(min_bps, max_bps, precision) + 1
    }

    /// The rate of the next trial, or `None` when the search is over (at the latest after
    /// [`RateSearch::max_trials`], however many trials were sender-limited).
    pub fn next(&self) -> Option<f64> {
        if self.trials >= self.max_trials {
            return None;
        }
        self.hint().or_else(|| self.zero_loss.next())
    }

    /// The trial just below the capacity estimate, while it is owed: the sustainable rate is not yet
    /// within the precision of the estimate, and the rate lies between what held and what did not.
    fn hint(&self) -> Option<f64> {
        let (capacity, _) = self.capacity.filter(|_| !self.hinted)?;
        let rate = capacity * (1.0 - self.precision / 2.0);
        let resolved = self.sustained.is_some_and(|s| s >= capacity * (1.0 - self.precision));
        let open = rate > self.sustained.unwrap_or(0.0) && self.unsustained.is_none_or(|u| rate < u);
        (!resolved && open && rate >= self.zero_loss.min_bps).then_some(rate)
    }

    /// Records the outcome of the trial at `rate` (the last [`RateSearch::next`]). A sender-limited trial
    /// leaves the offered rate not reached, and counts as a pass at the rate its sender achieved (the link
    /// carried that much) when that rate is within the search's range; it estimates no capacity (its
    /// arrivals follow the sender's pauses).
    pub fn record(&mut self, rate: f64, outcome: TrialOutcome) {
        self.trials += 1;
        if self.hint() == Some(rate) {
            self.hinted = true;
        }
        if let (Verdict::SenderLimited, Some(sent)) = (outcome.verdict, outcome.sent_bps) {
            // The offered rate was not reached (it stays out of reach for the search, which so moves on);
            // the link carried what was sent. A rate below the search's minimum is outside what the user
            // asked to search, and is not reported as a result of it.
            self.zero_loss.record_at(rate, Verdict::SenderLimited);
            if sent > 0.0 && sent < rate && sent >= self.zero_loss.min_bps {
                self.zero_loss.record_at(sent, Verdict::Pass);
                if outcome.growing == Some(false) {
                    self.sustained = Some(self.sustained.map_or(sent, |s| s.max(sent)));
                }
            }
            return;
        }
        self.zero_loss.record_at(rate, outcome.verdict);
        if outcome.sustained() {
            self.sustained = Some(self.sustained.map_or(rate, |s| s.max(rate)));
        } else if outcome.over_capacity() {
            self.unsustained = Some(self.unsustained.map_or(rate, |u| u.min(rate)));
            // The trial offered closest above the capacity estimates it best.
            if let Some(arrived) = outcome.arrival_bps.filter(|a| *a > 0.0 && *a < rate) {
                if self.capacity.is_none_or(|(_, offered)| rate < offered) {
                    self.capacity = Some((arrived, rate));
                }
            }
        }
    }

    /// The RFC 2544 zero-loss rate: the highest rate that passed.
    pub fn zero_loss(&self) -> Option<f64> {
        self.zero_loss.best()
    }

    /// The sustainable rate: the highest rate that passed without queue growth.
    pub fn sustainable(&self) -> Option<f64> {
        self.sustained
    }

    /// The capacity estimate and the offered rate of the trial it came from.
    pub fn capacity(&self) -> Option<(f64, f64)> {
        self.capacity
    }
}

/// The binary search of RFC 2544 section 26.1 over offered rates in `[min, max]` (`0 < min < max`): first
/// the maximum; then, if it did not pass, a rate between the highest that passed so far (or the minimum)
/// and the lowest that did not: their geometric mean while they are more than a factor 2 apart (so a link
/// far slower than the bound is found in a few trials), their midpoint after that, until they are within
/// `precision` of the upper one; last, if nothing passed, the minimum itself.
#[derive(Debug, Clone)]
pub struct BinarySearch {
    min_bps: f64,
    max_bps: f64,
    precision: f64,
    /// The highest rate that passed.
    best: Option<f64>,
    /// The lowest rate that did not pass (or, before the first trial, the maximum).
    failing: f64,
    /// The rate to try next.
    next: Option<f64>,
    tried_min: bool,
}

impl BinarySearch {
    /// A search between `min_bps` and `max_bps`, resolved to `precision` (a fraction, e.g. 0.01) of the
    /// rate found.
    pub fn new(min_bps: f64, max_bps: f64, precision: f64) -> Self {
        Self { min_bps, max_bps, precision, best: None, failing: max_bps, next: Some(max_bps), tried_min: false }
    }

    /// The most trials a search can take: the maximum; geometric steps until the bounds are a factor 2
    /// apart; halvings until they are `precision` apart; the minimum.
    pub fn max_trials(min_bps: f64, max_bps: f64, precision: f64) -> u32 {
        let octaves = (max_bps / min_bps).log2();
        let geometric = if octaves > 1.0 { octaves.log2().ceil() as u32 } else { 0 };
        let halvings = (1.0 / precision).log2().ceil().max(0.0) as u32;
        2 + geometric + halvings
    }

    /// The rate of the next trial, or `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// The highest rate that passed so far.
    pub fn best(&self) -> Option<f64> {
        self.best
    }

    /// Records the outcome of the trial at [`BinarySearch::next`] and chooses the one after.
    pub fn record(&mut self, verdict: Verdict) {
        if let Some(rate) = self.next {
            self.record_at(rate, verdict);
        }
    }

    /// Records the outcome of a trial at any `rate` in the range (not only [`BinarySearch::next`]), and
    /// chooses the next.
    pub fn record_at(&mut self, rate: f64, verdict: Verdict) {
        self.tried_min |= rate <= self.min_bps;
        if verdict == Verdict::Pass {
            self.best = Some(self.best.map_or(rate, |b| b.max(rate)));
        } else {
            self.failing = self.failing.min(rate);
        }
        let low = self.best.unwrap_or(self.min_bps);
        self.next = if self.best == Some(self.max_bps) {
            None
        } else if self.failing - low > self.precision * self.failing {
            Some(if self.failing > 2.0 * low { (low * self.failing).sqrt() } else { (low + self.failing) / 2.0 })
        } else if self.best.is_none() && !self.tried_min {
            Some(self.min_bps)
        } else {
            None
        };
    }
}

/// The search of RFC 2544 section 26.4 for the longest burst without loss, over whole lengths from 1 to
/// `max`: first `max`; then halving the range between the longest that passed and the shortest that did
/// not, down to one datagram.
#[derive(Debug, Clone)]
pub struct LengthSearch {
    /// The longest length that passed (0: none yet).
    passed: u64,
    /// The shortest length that did not pass (`max + 1` before any did not).
    failed: u64,
    next: Option<u64>,
}

impl LengthSearch {
    /// A search up to `max` datagrams (at least 1).
    pub fn new(max: u64) -> Self {
        let max = max.max(1);
        Self { passed: 0, failed: max + 1, next: Some(max) }
    }

    /// The most trials a search up to `max` takes.
    pub fn max_trials(max: u64) -> u32 {
        1 + (max.max(1) as f64).log2().ceil() as u32
    }

    /// The length of the next trial, or `None` when the search is over.
    pub fn next(&self) -> Option<u64> {
        self.next
    }

    /// The longest length that passed (0 if even one datagram was lost).
    pub fn longest(&self) -> u64 {
        self.passed
    }

    /// Records whether the burst of [`LengthSearch::next`] arrived whole, and chooses the next length.
    pub fn record(&mut self, passed: bool) {
        let Some(length) = self.next else { return };
        if passed {
            self.passed = self.passed.max(length);
        } else {
            self.failed = self.failed.min(length);
        }
        self.next = (self.failed - self.passed > 1).then(|| self.passed + (self.failed - self.passed) / 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a link that passes every rate up to `capacity`.
    fn search(min: f64, max: f64, precision: f64, capacity: f64) -> (Option<f64>, Vec<f64>) {
        let mut search = BinarySearch::new(min, max, precision);
        let mut tried = Vec::new();
        while let Some(rate) = search.next() {
            tried.push(rate);
            search.record(if rate <= capacity { Verdict::Pass } else { Verdict::Loss });
            assert!(tried.len() < 100, "the search ends");
        }
        (search.best(), tried)
    }

    #[test]
    fn a_rate_that_passes_at_the_maximum_ends_the_search() {
        assert_eq!(search(1e3, 100e6, 0.01, 200e6), (Some(100e6), vec![100e6]));
    }

    #[test]
    fn the_search_converges_within_the_precision_and_its_bound() {
        let bound = BinarySearch::max_trials(16e3, 16e9, 0.01);
        let mut capacity = 17e3;
        while capacity < 16e9 {
            let (best, tried) = search(16e3, 16e9, 0.01, capacity);
            let best = best.expect("a rate passes");
            assert!(best <= capacity && capacity - best <= 0.01 * capacity * 1.02, "capacity {capacity}: found {best}");
            assert!(tried.len() as u32 <= bound, "capacity {capacity}: {} trials > {bound}", tried.len());
            capacity *= 1.37;
        }
    }

    #[test]
    fn nothing_passing_tries_the_minimum_last_and_reports_none() {
        let (best, tried) = search(1e6, 100e6, 0.01, 0.5e6);
        assert_eq!(best, None);
        assert_eq!(tried.last(), Some(&1e6));
        assert!(tried.len() as u32 <= BinarySearch::max_trials(1e6, 100e6, 0.01));
        let (best, tried) = search(1e6, 100e6, 0.01, 1.2e6);
        assert!(best.is_some_and(|b| (1e6..=1.2e6).contains(&b)), "{best:?} after {tried:?}");
    }

    #[test]
    fn the_trial_bound_counts_the_steps() {
        // 1000:1 is 10 octaves, halved 4 times to below one; 1 % needs 7 halvings; plus maximum and minimum.
        assert_eq!(BinarySearch::max_trials(0.1e6, 100e6, 0.01), 13);
        assert_eq!(BinarySearch::max_trials(60e6, 100e6, 0.01), 9);
        assert_eq!(BinarySearch::max_trials(60e6, 100e6, 0.5), 3);
    }

    #[test]
    fn the_length_search_finds_the_longest_whole_burst_exactly() {
        for (max, limit) in [(100_000u64, 673u64), (100_000, 0), (100_000, 100_000), (1, 1), (1000, 999), (7, 3)] {
            let mut search = LengthSearch::new(max);
            let mut trials = 0;
            while let Some(length) = search.next() {
                search.record(length <= limit);
                trials += 1;
            }
            assert_eq!(search.longest(), limit.min(max), "max {max}, limit {limit}");
            assert!(trials <= LengthSearch::max_trials(max), "{trials} trials for max {max}");
        }
        assert_eq!(LengthSearch::max_trials(100_000), 18);
    }

    /// Runs a two-figure search against a link of `capacity` whose queue absorbs `excess` (a fraction of
    /// the capacity) over a trial without loss, and whose receiver sees the capacity when offered more.
    fn two_rates(min: f64, max: f64, capacity: f64, excess: f64) -> (RateSearch, Vec<f64>) {
        let mut search = RateSearch::new(min, max, 0.01);
        let mut tried = Vec::new();
        while let Some(rate) = search.next() {
            tried.push(rate);
            let verdict = if rate <= capacity * (1.0 + excess) { Verdict::Pass } else { Verdict::Loss };
            let growing = Some(rate > capacity);
            let arrival_bps = Some(rate.min(capacity));
            search.record(rate, TrialOutcome { verdict, growing, arrival_bps, sent_bps: Some(rate) });
            assert!(tried.len() < 100, "the search ends");
        }
        (search, tried)
    }

    #[test]
    fn a_deep_queue_lifts_the_zero_loss_rate_but_not_the_sustainable_one() {
        // 51.53 Mbit/s of capacity, a queue that hides 3.2 % more for a trial (issue 10's 53 Mbit/s link).
        let capacity = 51.53e6;
        let (search, tried) = two_rates(0.6e6, 60e6, capacity, 0.032);
        let zero_loss = search.zero_loss().expect("a zero-loss rate");
        let sustainable = search.sustainable().expect("a sustainable rate");
        assert!(zero_loss > capacity * 1.02 && zero_loss <= capacity * 1.032, "{zero_loss} after {tried:?}");
        assert!(sustainable <= capacity && sustainable >= capacity * 0.99, "{sustainable} after {tried:?}");
        assert!((tried[1] - capacity * 0.995).abs() < 1.0, "the second trial is just below the estimate: {tried:?}");
        assert_eq!(search.capacity().map(|(c, _)| c), Some(capacity));
        assert!(tried.len() as u32 <= RateSearch::max_trials(0.6e6, 60e6, 0.01), "{tried:?}");
        // No more trials than the zero-loss search alone took before (a bound of 1/1000 of the maximum).
        assert!(tried.len() as u32 <= BinarySearch::max_trials(0.06e6, 60e6, 0.01), "{tried:?}");
    }

    #[test]
    fn without_a_queue_both_rates_are_the_capacity() {
        let (search, tried) = two_rates(0.3e6, 30e6, 20e6, 0.0);
        let (zero_loss, sustainable) = (search.zero_loss().expect("rate"), search.sustainable().expect("rate"));
        assert!((20e6 * 0.99..=20e6).contains(&zero_loss), "{tried:?}");
        assert!((20e6 * 0.99..=20e6).contains(&sustainable), "{tried:?}");
        // A bound below the capacity passes at once and holds: one trial.
        let (search, tried) = two_rates(0.1e6, 10e6, 20e6, 0.0);
        assert_eq!((search.zero_loss(), search.sustainable(), tried.len()), (Some(10e6), Some(10e6), 1));
    }

    #[test]
    fn a_sender_that_falls_short_passes_what_it_sent_and_the_search_stays_bounded() {
        let mut search = RateSearch::new(1e6, 100e6, 0.01);
        let limited = |sent: f64| TrialOutcome {
            verdict: Verdict::SenderLimited,
            growing: Some(false),
            arrival_bps: Some(sent),
            sent_bps: Some(sent),
        };
        search.record(100e6, limited(80e6));
        assert_eq!((search.zero_loss(), search.sustainable()), (Some(80e6), Some(80e6)));
        // The search goes on between what was sent and what was not reached.
        assert!(search.next().is_some_and(|next| next > 80e6 && next < 100e6), "{:?}", search.next());
        // A sender that never gets further ends the search within its bound.
        let mut trials = 1;
        while let Some(rate) = search.next() {
            search.record(rate, limited(80e6));
            trials += 1;
        }
        assert!(trials <= RateSearch::max_trials(1e6, 100e6, 0.01), "{trials}");
        assert_eq!(search.zero_loss(), Some(80e6));
        assert_eq!(search.capacity(), None, "a sender's pauses are not the link's capacity");
    }

    #[test]
    fn a_sender_short_of_the_search_minimum_gives_no_rate() {
        // Asked to search 400..1000 Gbit/s, a sender that reaches 20 Gbit/s says nothing about that range.
        let mut search = RateSearch::new(400e9, 1000e9, 0.1);
        let limited = TrialOutcome {
            verdict: Verdict::SenderLimited,
            growing: Some(false),
            arrival_bps: Some(20e9),
            sent_bps: Some(20e9),
        };
        while let Some(rate) = search.next() {
            search.record(rate, limited);
        }
        assert_eq!((search.zero_loss(), search.sustainable()), (None, None));
    }
}
