//! Min, Typ and Max of a datasheet row, and how Min and Max of goodput are taken on links where an
//! interval is short against the round trip or the segments (spans of several intervals), or where the
//! directions take turns (per turn, with a both-ways row). Definitions: docs/metrics.md, "Datasheets".

use crate::run_result::ThroughputSeries;

/// One repetition's figures of a row: Min and Max (`None` when the run held no span to take them over),
/// Typ, and how Min and Max were taken when not over the test's intervals.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Spread {
    pub min: Option<f64>,
    pub typ: f64,
    pub max: Option<f64>,
    pub basis: Option<Basis>,
}

impl Spread {
    pub fn plain(min: f64, typ: f64, max: f64) -> Self {
        Self { min: Some(min), typ, max: Some(max), basis: None }
    }
}

/// How Min and Max of a goodput row were taken.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Basis {
    /// Over spans of several intervals: `span_s` long, from `round_trips_s` (four of the largest round
    /// trip seen) or `segments_s` (the time of [`SPAN_SEGMENTS`] segments at the goodput).
    Spans { span_s: f64, round_trips_s: f64, segments_s: f64, spans: usize },
    /// Over the turns of a half-duplex test, each its bytes over its writing and turnaround; `both`: of
    /// both directions, for the both-ways row.
    Turns { turns: usize, both: bool },
}

impl Basis {
    pub fn span_s(&self) -> Option<f64> {
        match self {
            Basis::Spans { span_s, .. } => Some(*span_s),
            Basis::Turns { .. } => None,
        }
    }

    pub fn span(&self) -> f64 {
        self.span_s().unwrap_or(0.0)
    }

    pub fn describe(&self, measured: bool) -> String {
        match self {
            Basis::Spans { span_s, round_trips_s, segments_s, spans } => {
                let (why, shorter) = match round_trips_s >= segments_s {
                    true => (
                        format!(
                            "{SPAN_ROUND_TRIPS:.0} of its longest round trips ({:.3} s each)",
                            round_trips_s / SPAN_ROUND_TRIPS
                        ),
                        "show TCP's bursts and stalls, not the link",
                    ),
                    false => (
                        format!("the time of {SPAN_SEGMENTS:.0} segments at its goodput"),
                        "count too few segments to give the link's rate",
                    ),
                };
                match measured {
                    true => format!("min/max over {spans} spans of {span_s:.3} s, {why}: shorter intervals {shorter}"),
                    false => format!(
                        "no min/max: the run is shorter than one span of {span_s:.3} s ({why}), and shorter intervals {shorter}"
                    ),
                }
            }
            Basis::Turns { turns, both } => {
                let plural = if *turns == 1 { "" } else { "s" };
                match both {
                    false => format!(
                        "min/max per turn ({turns} turn{plural}); typ over the time its own turns held the link (writing and turnaround): the directions do not add up, see both ways"
                    ),
                    true => format!(
                        "both directions' bytes over the time of all their turns; min/max per turn ({turns} turn{plural})"
                    ),
                }
            }
        }
    }
}

/// Round trips a span for Min and Max must hold: an interval of fewer round trips sees TCP's window (a
/// stall reads 0, a released backlog or a retransmission filling a hole reads above the link).
const SPAN_ROUND_TRIPS: f64 = 4.0;
/// Segments (datagrams) a span for Min and Max must hold: a span's bytes are whole reads, off by up to a
/// segment at each edge, so 20 keep that within 10 %.
const SPAN_SEGMENTS: f64 = 20.0;

/// Min and Max of a row over its whole intervals in its totals (or spans of several, when an interval is
/// short against the link's round trip or segments), and its goodput; bits per second. When the directions
/// take turns, Min and Max are the turns' goodputs instead.
pub(super) fn goodput_spread(s: &ThroughputSeries, rows: &[ThroughputSeries]) -> Option<Spread> {
    let typ = s.receiver_bps?;
    if let Some(spread) = turns_spread(typ, s.turns.iter(), false) {
        return Some(spread);
    }
    let alternating = s.phase == crate::Direction::Alternating;
    let whole: Vec<&crate::throughput::IntervalSample> = s
        .intervals
        .iter()
        .filter(|i| i.in_total_s >= (i.end_s - i.start_s) * 0.999 && !(alternating && i.bytes == 0))
        .collect();
    let interval_s = whole.iter().map(|i| i.end_s - i.start_s).fold(0.0, f64::max);
    let mine = |r: &&ThroughputSeries| r.flow == s.flow && r.phase == s.phase && r.size_bytes == s.size_bytes;
    let tcp: Vec<&crate::throughput::TcpStats> = rows.iter().filter(mine).filter_map(|r| r.tcp.as_ref()).collect();
    let rtt_s = tcp.iter().map(|t| t.max_srtt_us.unwrap_or(0).max(t.srtt_us)).max().unwrap_or(0) as f64 / 1e6;
    // The unit a receiver's count moves by: a TCP segment, or a UDP datagram. A byte stream without TCP
    // state (Unix sockets, an echo over a serial line) is read in whatever has arrived: no such unit.
    let segment = match tcp.iter().map(|t| t.mss_bytes).find(|&m| m > 0) {
        Some(mss) => mss,
        None if s.udp.is_some() => s.size_bytes,
        None => 0,
    };
    let round_trips_s = SPAN_ROUND_TRIPS * rtt_s;
    let segments_s = if typ > 0.0 { SPAN_SEGMENTS * segment as f64 * 8.0 / typ } else { 0.0 };
    let per_span =
        if interval_s > 0.0 { (round_trips_s.max(segments_s) / interval_s - 1e-9).ceil().max(1.0) } else { 1.0 };
    let per_span = per_span.min(whole.len().max(1) as f64 + 1.0) as usize;
    if per_span <= 1 {
        let min = whole.iter().map(|i| i.goodput_bps).fold(typ, f64::min);
        let max = whole.iter().map(|i| i.goodput_bps).fold(typ, f64::max);
        return Some(Spread::plain(min, typ, max));
    }
    let spans: Vec<f64> = whole
        .chunks_exact(per_span)
        .map(|c| {
            c.iter().map(|i| i.bytes).sum::<u64>() as f64 * 8.0 / c.iter().map(|i| i.end_s - i.start_s).sum::<f64>()
        })
        .collect();
    let span_s = per_span as f64 * interval_s;
    let basis = Basis::Spans { span_s, round_trips_s, segments_s, spans: spans.len() };
    let min = spans.iter().copied().reduce(f64::min).map(|m| m.min(typ));
    let max = spans.iter().copied().reduce(f64::max).map(|m| m.max(typ));
    Some(Spread { min, typ, max, basis: Some(basis) })
}

/// Min and Max over half-duplex turns (each turn's bytes over the time it held the link), when any turn
/// drained; `None` otherwise.
fn turns_spread<'a>(
    typ: f64,
    turns: impl Iterator<Item = &'a crate::throughput::TurnSample>,
    both: bool,
) -> Option<Spread> {
    let rates: Vec<f64> = turns.filter_map(|t| t.goodput_bps()).collect();
    let min = rates.iter().copied().reduce(f64::min)?;
    let max = rates.iter().copied().reduce(f64::max)?;
    Some(Spread { min: Some(min), typ, max: Some(max), basis: Some(Basis::Turns { turns: rates.len(), both }) })
}

/// For each write size whose directions took turns, drained every turn and carry their figures over
/// their own turns: a row of both directions' bytes over the time of all their turns, which a half-duplex
/// link carries at most at its rate (the directions' own figures are each near it, and do not add up).
pub(super) fn both_ways(sums: &[&ThroughputSeries]) -> Vec<(String, Spread)> {
    let alternating: Vec<&&ThroughputSeries> =
        sums.iter().filter(|s| s.phase == crate::Direction::Alternating && !s.turns.is_empty()).collect();
    let mut sizes: Vec<u64> = alternating.iter().map(|s| s.size_bytes).collect();
    sizes.dedup();
    let several = sizes.len() > 1;
    sizes
        .into_iter()
        .filter_map(|size| {
            let pair: Vec<&&&ThroughputSeries> = alternating.iter().filter(|s| s.size_bytes == size).collect();
            let drained = pair.iter().all(|s| s.turns.iter().all(|t| t.held_s().is_some()));
            if pair.len() != 2 || !drained {
                return None;
            }
            let bytes: u64 = pair.iter().map(|s| s.receiver_bytes).sum();
            let held: f64 = pair.iter().map(|s| s.window_s).sum();
            let typ = (held > 0.0).then(|| bytes as f64 * 8.0 / held)?;
            let spread = turns_spread(typ, pair.iter().flat_map(|s| s.turns.iter()), true)?;
            let suffix = if several { format!(" (both ways, {size} B writes)") } else { " (both ways)".to_string() };
            Some((suffix, spread))
        })
        .collect()
}
