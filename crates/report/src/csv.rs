//! The CSV rendering: a header and one row per series (or per size of a search), in the units named by each
//! column.
//!
//! Each kind of row is a struct: serde names the columns after its fields and the `csv` crate writes the
//! header and the rows from it, so a header cannot drift from its rows, and any text a run carries (a label,
//! a congestion control's name) is quoted as RFC 4180 asks. An empty cell means "not applicable" (no size,
//! the aggregate session, or nothing measured).

use std::io::{self, Write};

use linkperf_core::run_result::{Series, ThroughputSeries};
use linkperf_core::{RunResult, TestKind};
use serde::{Serialize, Serializer};

use crate::Reporter;

/// CSV with a header row.
pub struct CsvReporter;

impl Reporter for CsvReporter {
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        write_csv(run, None, out)
    }
}

/// A kept run's number and labels, which `linkperf export --csv` puts before each row.
#[derive(Serialize)]
struct Kept {
    /// The run's number in the database.
    run: i64,
    /// Its labels, as a JSON array of strings (a label may hold any character, a comma too).
    labels: String,
}

/// Writes `run` as CSV: a header, then its rows. With `kept` (a stored run's number and labels) every row
/// starts with `run` and `labels` columns.
pub fn write_csv(run: &RunResult, kept: Option<(i64, &[String])>, out: &mut dyn Write) -> io::Result<()> {
    let kept = kept.map(|(run, labels)| Kept {
        run,
        labels: serde_json::to_string(labels).expect("a list of strings serialises"),
    });
    let mut writer = csv::Writer::from_writer(out);
    let test = run.parameters.test_name();
    let proto = run.parameters.proto().name();
    // Each kind of test names the rows it has: a new kind must choose here.
    match run.parameters.kind() {
        TestKind::Latency | TestKind::Connect | TestKind::Idle => {
            write_rows(&mut writer, &kept, run.series.iter().map(|s| LatencyRow::new(test, proto, s)))?
        }
        TestKind::Throughput | TestKind::Sweep => {
            write_rows(&mut writer, &kept, run.throughput.iter().map(|s| ThroughputRow::new(test, proto, s)))?
        }
        TestKind::Ratesearch => write_rows(&mut writer, &kept, run.rate_search.iter().map(RateSearchRow::new))?,
        TestKind::Burst => write_rows(&mut writer, &kept, run.bursts.iter().map(BurstRow::new))?,
    }
    writer.flush()
}

/// Writes `rows`, each after `kept` if set. The header comes from the first row's field names; a run
/// without rows still gets it, from `R`'s empty row.
fn write_rows<R: Serialize + Default, W: Write>(
    writer: &mut csv::Writer<W>,
    kept: &Option<Kept>,
    rows: impl Iterator<Item = R>,
) -> io::Result<()> {
    let mut rows = rows.peekable();
    if rows.peek().is_none() {
        // The header alone: csv writes it with a first record, so write an empty row aside and keep its header.
        let mut aside = csv::Writer::from_writer(Vec::new());
        match kept {
            Some(kept) => aside.serialize((kept, R::default())),
            None => aside.serialize(R::default()),
        }
        .map_err(io::Error::other)?;
        let bytes = aside.into_inner().map_err(|e| io::Error::other(e.to_string()))?;
        let header = csv::Reader::from_reader(bytes.as_slice()).headers().map_err(io::Error::other)?.clone();
        return writer.write_record(&header).map_err(io::Error::other);
    }
    for row in rows {
        match kept {
            Some(kept) => writer.serialize((kept, row)),
            None => writer.serialize(row),
        }
        .map_err(io::Error::other)?;
    }
    Ok(())
}

/// A figure written with `D` decimals, as the columns always were (`12.345`).
#[derive(Default)]
struct Fixed<const D: usize>(f64);

impl<const D: usize> Serialize for Fixed<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{:.*}", D, self.0))
    }
}

/// `D` decimals, or an empty cell.
fn fixed<const D: usize>(value: Option<f64>) -> Option<Fixed<D>> {
    value.map(Fixed)
}

/// A latency, connect or idle series; round trips in µs.
#[derive(Serialize, Default)]
struct LatencyRow<'a> {
    test: &'a str,
    proto: &'a str,
    size_bytes: Option<u64>,
    session: Option<u32>,
    count: u64,
    min_us: Option<Fixed<3>>,
    mean_us: Option<Fixed<3>>,
    stddev_us: Option<Fixed<3>>,
    p50_us: Option<Fixed<3>>,
    p90_us: Option<Fixed<3>>,
    p99_us: Option<Fixed<3>>,
    p999_us: Option<Fixed<3>>,
    max_us: Option<Fixed<3>>,
    transactions_per_s: Fixed<3>,
    lost: u64,
    late: u64,
    elapsed_s: Fixed<6>,
    complete: bool,
    load: &'a str,
}

impl<'a> LatencyRow<'a> {
    fn new(test: &'a str, proto: &'a str, s: &'a Series) -> Self {
        let m = s.summary.as_ref();
        let us = |pick: fn(&linkperf_core::LatencySummary) -> f64| fixed(m.map(pick));
        LatencyRow {
            test,
            proto,
            size_bytes: s.size_bytes,
            session: s.session,
            count: m.map_or(0, |m| m.count),
            min_us: us(|m| m.min_us),
            mean_us: us(|m| m.mean_us),
            stddev_us: us(|m| m.stddev_us),
            p50_us: us(|m| m.p50_us),
            p90_us: us(|m| m.p90_us),
            p99_us: us(|m| m.p99_us),
            p999_us: us(|m| m.p999_us),
            max_us: us(|m| m.max_us),
            transactions_per_s: Fixed(s.transactions_per_s),
            lost: s.lost,
            late: s.late,
            elapsed_s: Fixed(s.elapsed_s),
            complete: s.complete,
            load: s.load.map_or("", |d| d.name()),
        }
    }
}

/// A throughput or sweep row: a sum or a stream of one flow and size; TCP and UDP columns empty for the
/// other transport.
#[derive(Serialize, Default)]
struct ThroughputRow<'a> {
    test: &'a str,
    proto: &'a str,
    phase: &'a str,
    size_bytes: u64,
    flow: &'a str,
    stream: Option<u16>,
    receiver_bps: Option<Fixed<3>>,
    sender_bps: Option<Fixed<3>>,
    receiver_bytes: u64,
    sender_bytes: u64,
    window_s: Fixed<6>,
    messages_per_s: Option<Fixed<3>>,
    us_per_message: Option<Fixed<3>>,
    retransmits: Option<u64>,
    cwnd_bytes: Option<u64>,
    srtt_us: Option<u64>,
    congestion: Option<&'a str>,
    offered_bps: Option<Fixed<3>>,
    sent_datagrams: Option<u64>,
    received_datagrams: Option<u64>,
    lost_datagrams: Option<u64>,
    loss_percent: Option<Fixed<3>>,
    out_of_order: Option<u64>,
    duplicates: Option<u64>,
    jitter_us: Option<Fixed<3>>,
    stalls: Option<u64>,
    complete: bool,
}

impl<'a> ThroughputRow<'a> {
    fn new(test: &'a str, proto: &'a str, s: &'a ThroughputSeries) -> Self {
        let (tcp, udp) = (s.tcp.as_ref(), s.udp.as_ref());
        ThroughputRow {
            test,
            proto,
            phase: s.phase.name(),
            size_bytes: s.size_bytes,
            flow: s.flow.name(),
            stream: s.stream,
            receiver_bps: fixed(s.receiver_bps),
            sender_bps: fixed(s.sender_bps),
            receiver_bytes: s.receiver_bytes,
            sender_bytes: s.sender_bytes,
            window_s: Fixed(s.window_s),
            messages_per_s: fixed(s.messages_per_s),
            us_per_message: fixed(s.us_per_message),
            retransmits: tcp.map(|t| t.retransmits),
            cwnd_bytes: tcp.map(|t| t.cwnd_bytes),
            srtt_us: tcp.map(|t| t.srtt_us),
            congestion: tcp.map(|t| t.congestion.as_str()),
            offered_bps: fixed(udp.and_then(|u| u.offered_bps)),
            sent_datagrams: udp.map(|u| u.sent),
            received_datagrams: udp.map(|u| u.received),
            lost_datagrams: udp.map(|u| u.lost),
            loss_percent: fixed(udp.and_then(|u| u.loss_percent)),
            out_of_order: udp.map(|u| u.out_of_order),
            duplicates: udp.map(|u| u.duplicates),
            jitter_us: fixed(udp.map(|u| u.jitter_us)),
            stalls: udp.map(|u| u.stalls),
            complete: s.complete,
        }
    }
}

/// The rate a search found for one size; its trials are throughput rows of the JSON document.
#[derive(Serialize, Default)]
struct RateSearchRow {
    test: &'static str,
    proto: &'static str,
    frame_bytes: Option<u64>,
    payload_bytes: u64,
    rate_bps: Option<Fixed<3>>,
    packets_per_s: Option<Fixed<3>>,
    received_bps: Option<Fixed<3>>,
    link_percent: Option<Fixed<3>>,
    trials: u64,
    min_bps: Fixed<3>,
    max_bps: Fixed<3>,
    sender_limited: bool,
    complete: bool,
    latency_count: Option<u64>,
    latency_min_us: Option<Fixed<3>>,
    latency_p50_us: Option<Fixed<3>>,
    latency_p99_us: Option<Fixed<3>>,
    latency_max_us: Option<Fixed<3>>,
    latency_lost: Option<u64>,
}

impl RateSearchRow {
    fn new(r: &linkperf_core::rate_search::ZeroLossRate) -> Self {
        let latency = r.latency.as_ref().and_then(|l| l.summary.as_ref().map(|m| (m, l.lost)));
        let us = |pick: fn(&linkperf_core::LatencySummary) -> f64| fixed(latency.map(|(m, _)| pick(m)));
        RateSearchRow {
            test: "ratesearch",
            proto: "udp",
            frame_bytes: r.frame_bytes,
            payload_bytes: r.payload_bytes,
            rate_bps: fixed(r.rate_bps),
            packets_per_s: fixed(r.packets_per_s),
            received_bps: fixed(r.received_bps),
            link_percent: fixed(r.link.as_ref().map(|l| l.percent)),
            trials: u64::from(r.trials),
            min_bps: Fixed(r.min_bps),
            max_bps: Fixed(r.max_bps),
            sender_limited: r.sender_limited,
            complete: r.complete,
            latency_count: latency.map(|(m, _)| m.count),
            latency_min_us: us(|m| m.min_us),
            latency_p50_us: us(|m| m.p50_us),
            latency_p99_us: us(|m| m.p99_us),
            latency_max_us: us(|m| m.max_us),
            latency_lost: latency.map(|(_, lost)| lost),
        }
    }
}

/// The longest whole burst for one size; `lengths` lists each search's, separated by spaces.
#[derive(Serialize, Default)]
struct BurstRow {
    test: &'static str,
    proto: &'static str,
    frame_bytes: Option<u64>,
    payload_bytes: u64,
    min_datagrams: Option<u64>,
    typ_datagrams: Option<u64>,
    max_datagrams: Option<u64>,
    max_tried: u64,
    sender_bps: Option<Fixed<3>>,
    trials: u64,
    complete: bool,
    lengths: String,
}

impl BurstRow {
    fn new(r: &linkperf_core::rate_search::BurstResult) -> Self {
        BurstRow {
            test: "burst",
            proto: "udp",
            frame_bytes: r.frame_bytes,
            payload_bytes: r.payload_bytes,
            min_datagrams: r.min,
            typ_datagrams: r.typ,
            max_datagrams: r.max,
            max_tried: r.max_datagrams,
            sender_bps: fixed(r.sender_bps),
            trials: u64::from(r.trials),
            complete: r.complete,
            lengths: r.lengths.iter().map(u64::to_string).collect::<Vec<_>>().join(" "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::fixture;

    fn csv_of(run: &RunResult, kept: Option<(i64, &[String])>) -> String {
        let mut out = Vec::new();
        write_csv(run, kept, &mut out).expect("renders");
        String::from_utf8(out).expect("utf-8")
    }

    /// Every record of `text`, as a CSV reader sees it.
    fn records(text: &str) -> Vec<csv::StringRecord> {
        csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .collect::<Result<_, _>>()
            .expect("parses")
    }

    #[test]
    fn csv_matches_snapshot() {
        insta::assert_snapshot!(csv_of(&fixture::latency_run(), None));
    }

    #[test]
    fn throughput_csv_matches_snapshot() {
        insta::assert_snapshot!(csv_of(&fixture::throughput_run(), None));
    }

    #[test]
    fn rate_search_csv_has_a_row_per_size_with_every_column() {
        let text = csv_of(&fixture::ratesearch_run(), None);
        assert!(text.starts_with("test,proto,frame_bytes,payload_bytes,rate_bps,packets_per_s,"), "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.contains("ratesearch,udp,1518,1472,10000000.000,849.185,"), "{text}");
    }

    #[test]
    fn burst_csv_has_a_row_per_size() {
        let text = csv_of(&fixture::burst_run(), None);
        assert_eq!(
            text.lines().next(),
            Some("test,proto,frame_bytes,payload_bytes,min_datagrams,typ_datagrams,max_datagrams,max_tried,sender_bps,trials,complete,lengths")
        );
        assert_eq!(
            text.lines().nth(1),
            Some("burst,udp,1518,1472,110,112,112,1000,9500000000.000,33,true,112 112 110")
        );
    }

    #[test]
    fn every_kind_of_run_has_every_column_in_every_row() {
        for run in fixture::every_kind_of_run() {
            let all = records(&csv_of(&run, None));
            assert!(all.len() >= 2, "{}: a header and rows", run.parameters.test_name());
            assert!(all.iter().all(|r| r.len() == all[0].len()), "{}: {all:?}", run.parameters.test_name());
        }
    }

    #[test]
    fn a_run_without_rows_still_has_its_header() {
        let mut run = fixture::throughput_run();
        run.throughput.clear();
        let text = csv_of(&run, Some((7, &[])));
        assert!(text.starts_with("run,labels,test,proto,phase,size_bytes,"), "{text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }

    #[test]
    fn labels_with_commas_quotes_and_newlines_stay_in_their_cell() {
        let labels = vec!["board, rev \"B\"\nsecond line".to_string(), "plain".to_string()];
        let text = csv_of(&fixture::latency_run(), Some((12, &labels)));
        // The known answer, as RFC 4180 writes it: the cell quoted, its quotes doubled. The cell holds the
        // labels as a JSON array, whose own quotes and escapes are its text.
        let second_line = text.lines().nth(1).expect("a row");
        assert!(
            second_line
                .starts_with("12,\"[\"\"board, rev \\\"\"B\\\"\"\\nsecond line\"\",\"\"plain\"\"]\",latency,tcp,64,"),
            "{second_line}"
        );
        let all = records(&text);
        assert_eq!((&all[0][0], &all[0][1]), ("run", "labels"));
        let cell: Vec<String> = serde_json::from_str(&all[1][1]).expect("a JSON array");
        assert_eq!(cell, labels, "read back as written");
        assert!(all.iter().all(|r| r.len() == all[0].len()), "{all:?}");
    }

    #[test]
    fn text_with_a_comma_a_quote_and_a_newline_is_quoted() {
        let mut run = fixture::throughput_run();
        for row in &mut run.throughput {
            if let Some(tcp) = row.tcp.as_mut() {
                tcp.congestion = "odd, \"name\"\nhere".into();
            }
        }
        let text = csv_of(&run, None);
        assert!(text.contains(",\"odd, \"\"name\"\"\nhere\","), "{text}");
        let all = records(&text);
        let column = all[0].iter().position(|c| c == "congestion").expect("a congestion column");
        assert!(all[1..].iter().all(|r| r.len() == all[0].len()));
        assert!(all[1..].iter().any(|r| &r[column] == "odd, \"name\"\nhere"), "{all:?}");
    }
}
