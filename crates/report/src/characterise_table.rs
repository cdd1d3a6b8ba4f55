//! The table renderings of the link characterisation runs: the offered-rate sweep (one row per step and
//! flow) and the zero-loss rate search (every trial, then the rate found per size, then the latency at it).

use std::io::{self, Write};

use linkperf_core::counters::HostCounters;
use linkperf_core::rate_search::{sender_fell_short, Verdict};
use linkperf_core::run_result::Parameters;
use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::throughput::Flow;
use linkperf_core::units::format_size;
use linkperf_core::{BurstSpec, RateSearchSpec, RunResult, SweepSpec, ThroughputSpec};

/// Rates, in Mbit/s.
fn mbit(bps: Option<f64>) -> String {
    bps.map(mbit_text).unwrap_or_else(|| "-".into())
}

/// A rate in Mbit/s with three decimals, and below 1 Mbit/s with enough more for four significant digits
/// (a 9600 bit/s link reads 0.009600, not 0.010).
fn mbit_text(bps: f64) -> String {
    let mbit = bps / 1e6;
    let decimals =
        if mbit.abs() >= 1.0 || mbit == 0.0 { 3 } else { (3.0 - mbit.abs().log10().floor()).min(9.0) as usize };
    format!("{mbit:.decimals$}")
}

/// The header lines of a sweep.
pub(crate) fn write_sweep_header(spec: &SweepSpec, target: &str, out: &mut dyn Write) -> io::Result<()> {
    let phases: Vec<&str> = spec.trial.phases.iter().map(|p| p.name()).collect();
    writeln!(
        out,
        "offered-rate sweep (RFC 2544 26.3) over udp to {target}: {}, {}-byte datagrams, {} s per step, {} s apart",
        phases.join(" then "),
        spec.trial.sizes_bytes.first().copied().unwrap_or(0),
        spec.trial.duration_s,
        spec.settle_s
    )?;
    writeln!(
        out,
        "Mbit/s of UDP payload (10^6 bit/s): offered as asked, sent as the sender achieved, received as read by the receiver;"
    )?;
    writeln!(
        out,
        "drops are the hosts' counter deltas over the step: receiver socket buffer, receiver interface, sender"
    )
}

/// One row per step and flow, with the growth of the one-way delay and the queue it implies; the first
/// step whose queue grew or lost datagrams is marked as the knee.
pub(crate) fn write_sweep(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let trial = match &run.parameters {
        Parameters::Sweep(spec) => spec.trial.clone(),
        _ => ThroughputSpec { proto: linkperf_core::Proto::Udp, ..ThroughputSpec::default() },
    };
    writeln!(
        out,
        "{:<9} {:>11} {:>11} {:>11} {:>17} {:>8} {:>10} {:>9} {:>9} {:>6} {:>7} {:>7} {:>8}  note",
        "flow",
        "offered",
        "sent",
        "received",
        "lost/sent",
        "loss %",
        "jitter µs",
        "delay ms/s",
        "queue kB",
        "ooo",
        "rcvbuf",
        "if drop",
        "snd drop"
    )?;
    let mut knee_seen = Vec::new();
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        let Some(udp) = &s.udp else { continue };
        let (sending, receiving) = ends(s);
        let count = |host: Option<&HostCounters>, f: fn(&HostCounters) -> u64| {
            host.map(|h| f(h).to_string()).unwrap_or_else(|| "-".into())
        };
        let delay = udp.delay.as_ref().filter(|d| d.growth_measured);
        let mut notes = Vec::new();
        let over = udp.lost > 0 || delay.is_some_and(|d| d.growing);
        if over && !knee_seen.contains(&s.flow) {
            knee_seen.push(s.flow);
            notes.push("<- knee: the queue grows or loses from here");
        }
        if sender_fell_short(s, &trial) {
            notes.push("sender fell short of the offered rate");
        }
        if !s.complete {
            notes.push("* incomplete");
        }
        let nic = nic_note(s);
        if let Some(nic) = &nic {
            notes.push(nic);
        }
        let row = format!(
            "{:<9} {:>11} {:>11} {:>11} {:>17} {:>8} {:>10.2} {:>9} {:>9} {:>6} {:>7} {:>7} {:>8}  {}",
            s.flow.name(),
            mbit(udp.offered_bps),
            mbit(s.sender_bps),
            mbit(s.receiver_bps),
            format!("{}/{}", udp.lost, udp.sent),
            udp.loss_percent.map(|l| format!("{l:.3}")).unwrap_or_else(|| "-".into()),
            udp.jitter_us,
            delay.map(|d| format!("{:.2}", unsigned_zero(d.growth_us_per_s / 1e3))).unwrap_or_else(|| "-".into()),
            delay.map(|d| format!("{:.1}", unsigned_zero(d.queue_bytes / 1e3))).unwrap_or_else(|| "-".into()),
            udp.out_of_order,
            count(receiving, |h| h.udp_rcvbuf_errors),
            count(receiving, HostCounters::receive_drops),
            count(sending, |h| h.udp_sndbuf_errors + h.interface.as_ref().map_or(0, |i| i.tx_dropped + i.tx_errors)),
            notes.join("; ")
        );
        writeln!(out, "{}", row.trim_end())?;
    }
    Ok(())
}

/// `value`, with a negative zero (and what rounds to it at two decimals) shown as `0`.
fn unsigned_zero(value: f64) -> f64 {
    if value.abs() < 0.005 {
        0.0
    } else {
        value
    }
}

/// The sending and receiving hosts' counters of a row.
fn ends(s: &ThroughputSeries) -> (Option<&HostCounters>, Option<&HostCounters>) {
    match s.flow {
        Flow::Upload => (s.client_counters.as_ref(), s.responder_counters.as_ref()),
        Flow::Download => (s.responder_counters.as_ref(), s.client_counters.as_ref()),
    }
}

/// The driver statistics that changed at either end of a row, for its notes: `NIC eth0: rx_pause 12, ...`.
fn nic_note(s: &ThroughputSeries) -> Option<String> {
    let ends = [("client", s.client_counters.as_ref()), ("responder", s.responder_counters.as_ref())];
    let parts: Vec<String> = ends
        .iter()
        .filter_map(|(end, h)| {
            let h = h.filter(|h| !h.nic.is_empty())?;
            let shown: Vec<String> = h.nic.iter().take(4).map(|n| format!("{} {}", n.name, n.value)).collect();
            let more = h.nic.len().saturating_sub(4);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            Some(format!("NIC {end}: {}{more}", shown.join(", ")))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The header lines of a rate search.
pub(crate) fn write_search_header(spec: &RateSearchSpec, target: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "zero-loss rate search (RFC 2544 26.1) over udp to {target}: {}, loss tolerance {} %, trials of {} s, {} s apart, precision {} %",
        spec.trial.phases.first().map(|p| p.name()).unwrap_or("-"),
        spec.loss_tolerance_percent,
        spec.trial.duration_s,
        spec.settle_s,
        spec.precision * 100.0
    )?;
    writeln!(
        out,
        "Mbit/s of UDP payload (10^6 bit/s); a frame is an Ethernet frame from header to FCS, as RFC 2544 sizes them"
    )
}

/// Every trial, then the rate found per size, then the latency at it.
pub(crate) fn write_search(spec: &RateSearchSpec, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "trials:")?;
    writeln!(
        out,
        "{:>7} {:<9} {:>11} {:>11} {:>11} {:>17} {:>8}  verdict",
        "payload", "flow", "offered", "sent", "received", "lost/sent", "loss %"
    )?;
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        let Some(udp) = &s.udp else { continue };
        let verdict = match udp.offered_bps {
            None => "probe train (its arrival rate bounds the search)".to_string(),
            Some(_) if !s.complete => "incomplete".to_string(),
            Some(_) => {
                let verdict = Verdict::of(s, spec.loss_tolerance_percent, &spec.trial).name().to_string();
                match udp.delay.as_ref().filter(|d| d.growth_measured && d.growing) {
                    Some(d) => format!("{verdict}, queue grew {:.1} kB", d.queue_bytes / 1e3),
                    None => verdict,
                }
            }
        };
        writeln!(
            out,
            "{:>7} {:<9} {:>11} {:>11} {:>11} {:>17} {:>8}  {verdict}",
            s.size_bytes,
            s.flow.name(),
            udp.offered_bps.map(mbit_text).unwrap_or_else(|| "unpaced".into()),
            mbit(s.sender_bps),
            mbit(s.receiver_bps),
            format!("{}/{}", udp.lost, udp.sent),
            udp.loss_percent.map(|l| format!("{l:.3}")).unwrap_or_else(|| "-".into()),
        )?;
    }
    writeln!(
        out,
        "\nzero-loss rate: the highest with at most {} % loss (RFC 2544 26.1); sustainable: the highest that also grew no queue",
        spec.loss_tolerance_percent
    )?;
    writeln!(
        out,
        "{:>6} {:>7} {:>11} {:>11} {:>12} {:>11} {:>9} {:>6}  searched between",
        "frame", "payload", "zero-loss", "sustainable", "frames/s", "received", "% link", "trials"
    )?;
    for r in &run.rate_search {
        let mut notes = Vec::new();
        if r.sender_limited {
            notes.push("some trials sender-limited".to_string());
        }
        if !r.complete {
            notes.push("* search incomplete: best so far".to_string());
        }
        writeln!(
            out,
            "{:>6} {:>7} {:>11} {:>11} {:>12} {:>11} {:>9} {:>6}  {} - {} Mbit/s ({}){}",
            r.frame_bytes.map(|f| f.to_string()).unwrap_or_else(|| "-".into()),
            r.payload_bytes,
            r.rate_bps.map(mbit_text).unwrap_or_else(|| "none".into()),
            mbit(r.sustainable_bps),
            r.packets_per_s.map(|p| format!("{p:.0}")).unwrap_or_else(|| "-".into()),
            mbit(r.received_bps),
            r.link.as_ref().map(|l| format!("{:.2}", l.percent)).unwrap_or_else(|| "-".into()),
            r.trials,
            mbit_text(r.min_bps),
            mbit_text(r.max_bps),
            r.max_source,
            if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) }
        )?;
    }
    for r in &run.rate_search {
        if let Some(capacity) = &r.capacity {
            writeln!(
                out,
                "  {}: capacity {} Mbit/s of payload, by the {}",
                format_size(r.payload_bytes),
                mbit_text(capacity.bps),
                capacity.method
            )?;
        }
        if let Some(link) = &r.link {
            writeln!(out, "  {}: % of link = {}", format_size(r.payload_bytes), link.formula)?;
        }
    }
    let with_latency: Vec<_> = run.rate_search.iter().filter(|r| r.latency.is_some()).collect();
    if !with_latency.is_empty() {
        writeln!(
            out,
            "\nlatency at that rate (RFC 2544 26.2): round trips in µs of probes sent beside a trial at the rate, at most {}/s and {} % of the rate",
            spec.latency_probes_per_s,
            linkperf_core::rate_search::LATENCY_PROBE_SHARE * 100.0
        )?;
        writeln!(
            out,
            "{:>7} {:>11} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6} {:>12}",
            "payload", "Mbit/s", "probes", "min", "p50(typ)", "p99", "max", "lost", "load loss %"
        )?;
        for r in with_latency {
            let Some(latency) = &r.latency else { continue };
            let load_loss = r.latency_load.as_ref().and_then(|u| u.loss_percent);
            match &latency.summary {
                Some(m) => writeln!(
                    out,
                    "{:>7} {:>11} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>6} {:>12}",
                    r.payload_bytes,
                    mbit(r.rate_bps),
                    m.count,
                    m.min_us,
                    m.p50_us,
                    m.p99_us,
                    m.max_us,
                    latency.lost,
                    load_loss.map(|l| format!("{l:.3}")).unwrap_or_else(|| "-".into())
                )?,
                None => writeln!(out, "{:>7} {:>11} no probe came back", r.payload_bytes, mbit(r.rate_bps))?,
            }
        }
    }
    Ok(())
}

/// The header lines of a burst search.
pub(crate) fn write_burst_header(spec: &BurstSpec, target: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "back-to-back bursts (RFC 2544 26.4) over udp to {target}: {}, {} searches per size up to {} datagrams, {} s apart",
        spec.trial.phases.first().map(|p| p.name()).unwrap_or("-"),
        spec.repeat,
        spec.max_datagrams,
        spec.settle_s
    )?;
    writeln!(
        out,
        "the longest burst, sent as fast as the sender can, that arrived whole, in datagrams; a frame is an Ethernet frame from header to FCS"
    )
}

/// The longest whole burst per size, as min/typ/max over the repetitions.
pub(crate) fn write_bursts(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>6} {:>7} {:>8} {:>8} {:>8} {:>12} {:>14} {:>6}  per search",
        "frame", "payload", "min", "typ", "max", "typ bytes", "sent Mbit/s", "trials"
    )?;
    for r in &run.bursts {
        let mut notes = Vec::new();
        if r.lengths.contains(&r.max_datagrams) {
            notes.push(format!("a search reached {} datagrams, the most tried: raise --max-burst", r.max_datagrams));
        }
        if !r.complete {
            notes.push("* incomplete".to_string());
        }
        let lengths: Vec<String> = r.lengths.iter().map(|l| l.to_string()).collect();
        let count = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
        let row = format!(
            "{:>6} {:>7} {:>8} {:>8} {:>8} {:>12} {:>14} {:>6}  {}{}",
            r.frame_bytes.map(|f| f.to_string()).unwrap_or_else(|| "-".into()),
            r.payload_bytes,
            count(r.min),
            count(r.typ),
            count(r.max),
            count(r.typ.map(|t| t * r.payload_bytes)),
            mbit(r.sender_bps),
            r.trials,
            lengths.join(" "),
            if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) }
        );
        writeln!(out, "{}", row.trim_end())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn slow_rates_keep_four_significant_digits() {
        assert_eq!(super::mbit_text(9600.0), "0.009600");
        assert_eq!(super::mbit_text(243_065.0), "0.2431");
        assert_eq!(super::mbit_text(19.445e6), "19.445");
        assert_eq!(super::mbit_text(0.0), "0.000");
    }

    #[test]
    fn a_step_notes_the_nic_statistics_that_changed() {
        use linkperf_core::counters::{HostCounters, NicCounter};
        let mut row = linkperf_core::fixture::udp_row(20e6, 20e6, 0);
        assert_eq!(super::nic_note(&row), None);
        let nic = |names: &[&str]| NicCounter { name: names.join(""), value: 7 };
        row.responder_counters = Some(HostCounters {
            nic: ["a", "b", "c", "d", "e", "f"].iter().map(|n| nic(&["rx_", n])).collect(),
            ..HostCounters::default()
        });
        assert_eq!(super::nic_note(&row).as_deref(), Some("NIC responder: rx_a 7, rx_b 7, rx_c 7, rx_d 7 and 2 more"));
    }
}
