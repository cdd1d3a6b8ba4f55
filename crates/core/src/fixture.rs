//! Fixed results of every kind, for tests of the renderers and the store (feature `fixture`, or this
//! crate's own tests). The figures are made up: nothing here is measured.

use crate::run_result::{Endpoints, Parameters, SeriesCounters, Target, ToolInfo};
use crate::spec::LoadSpec;
use crate::*;

/// A two-size, two-session TCP latency run with fixed samples.
pub fn latency_run() -> RunResult {
    let host = HostFacts {
        hostname: "bench-a".into(),
        kernel: "Linux 6.1.0".into(),
        cpu_model: "Test CPU".into(),
        cpus: 2,
        interface: None,
    };
    let mut series = Vec::new();
    for size in [64u64, 1024] {
        let mut all = RttHistogram::new();
        let mut per_session = Vec::new();
        for session in 0..2u64 {
            let mut h = RttHistogram::new();
            (1..=100u64).for_each(|i| h.record(10_000 + i * 100 + session * 1_000 + size));
            all.merge(&h);
            per_session.push(h);
        }
        let counters = SeriesCounters { lost: 0, late: 0, elapsed_s: 0.01, complete: true };
        series.push(Series::new(Some(size), None, &all, counters));
        for (i, h) in per_session.iter().enumerate() {
            series.push(Series::new(Some(size), Some(i as u32 + 1), h, counters));
        }
    }
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo { name: "linkperf".into(), version: "0.0.0-test".into() },
        command: vec!["linkperf".into(), "latency".into(), "--sessions".into(), "2".into()],
        started_at: "2026-11-22T00:00:00Z".into(),
        parameters: Parameters::Latency(LatencySpec {
            proto: Proto::Tcp,
            sizes_bytes: vec![64, 1024],
            stop: StopCondition::Count(100),
            warmup: 10,
            wait: WaitMode::Block,
            sessions: 2,
            rate_per_s: None,
            timeout_s: 2.0,
            load: None,
        }),
        target: Target { host: "embedded".into(), address: "127.0.0.1:5250".into() },
        endpoints: Endpoints {
            client: host.clone(),
            responder: host,
            echo: None,
            placement: Default::default(),
            sockets: Default::default(),
        },
        series,
        throughput: Vec::new(),
        rate_search: Vec::new(),
        bursts: Vec::new(),
        warnings: Vec::new(),
        status: RunStatus::Complete,
    }
}

/// A two-stream TCP upload of 1 s intervals with fixed stream records.
pub fn throughput_run() -> RunResult {
    use crate::run_result::ThroughputSeries;
    use crate::throughput::{sum_streams, End, Flow, StreamMeter, TcpStats};
    let second = 1_000_000_000u64;
    let records: Vec<_> = (0..2u16)
        .map(|i| {
            let mut meter =
                StreamMeter::new(i, Flow::Upload, End::Receiver, crate::throughput::Bins::from_ns(second, second));
            (0..=30u64).for_each(|k| meter.record(1_000_000 + u64::from(i) * 250_000, k * second / 10 + 1));
            meter.finish(None)
        })
        .collect();
    let sum = sum_streams(&records, 0).expect("common intervals");
    let tcp = TcpStats {
        retransmits: 3,
        cwnd_bytes: 655_360,
        srtt_us: 42,
        mss_bytes: 65_483,
        congestion: "cubic".into(),
        max_srtt_us: None,
    };
    let mut throughput = vec![ThroughputSeries {
        phase: Direction::Upload,
        size_bytes: 131_072,
        flow: Flow::Upload,
        stream: None,
        receiver_bps: Some(sum.goodput_bps),
        sender_bps: Some(sum.goodput_bps * 1.001),
        receiver_bytes: sum.bytes,
        sender_bytes: sum.bytes + 1000,
        window_s: sum.window_s,
        messages_per_s: Some(sum.goodput_bps / 8.0 / 131_072.0),
        us_per_message: Some(131_072.0 * 8.0 / sum.goodput_bps * 1e6),
        intervals: sum.intervals,
        tcp: None,
        udp: None,
        sender_cpu: None,
        receiver_cpu: None,
        link: None,
        client_counters: None,
        responder_counters: None,
        turns: Vec::new(),
        complete: true,
    }];
    for r in &records {
        throughput.push(ThroughputSeries {
            stream: Some(r.index),
            receiver_bps: Some(r.goodput_bps()),
            sender_bps: Some(r.goodput_bps()),
            receiver_bytes: r.bytes,
            sender_bytes: r.bytes,
            window_s: (r.last_ns - r.first_ns) as f64 / 1e9,
            messages_per_s: Some(r.goodput_bps() / 8.0 / 131_072.0),
            us_per_message: Some(131_072.0 * 8.0 / r.goodput_bps() * 1e6),
            intervals: Vec::new(),
            tcp: Some(tcp.clone()),
            ..throughput[0].clone()
        });
    }
    let mut run = latency_run();
    run.parameters = Parameters::Throughput(ThroughputSpec {
        streams: 2,
        sizes_bytes: vec![131_072],
        duration_s: 3.0,
        ..ThroughputSpec::default()
    });
    run.command = vec!["linkperf".into(), "throughput".into(), "-P".into(), "2".into()];
    run.series = Vec::new();
    run.throughput = throughput;
    run
}

/// A finished 2 s UDP upload sum of 1472-byte datagrams offered at `offered` bit/s, sent at `achieved`, with
/// `lost` of its datagrams lost.
pub fn udp_row(offered: f64, achieved: f64, lost: u64) -> crate::run_result::ThroughputSeries {
    use crate::run_result::UdpSeries;
    let sent = (achieved * 2.0 / 8.0 / 1472.0) as u64;
    crate::run_result::ThroughputSeries {
        size_bytes: 1472,
        receiver_bps: Some((sent - lost) as f64 * 1472.0 * 8.0 / 2.0),
        sender_bps: Some(achieved),
        intervals: Vec::new(),
        udp: Some(UdpSeries {
            offered_bps: Some(offered),
            sent,
            received: sent - lost,
            lost,
            loss_percent: Some(lost as f64 * 100.0 / sent as f64),
            out_of_order: 0,
            duplicates: 0,
            jitter_us: 12.5,
            stalls: 0,
            attribution: None,
            delay: None,
        }),
        ..throughput_run().throughput[0].clone()
    }
}

/// UDP rows offered at 10, 20 and 30 Mbit/s to a 19.4 Mbit/s path, with fixed counts.
fn udp_rows() -> Vec<crate::run_result::ThroughputSeries> {
    [(10e6, 0u64), (20e6, 30), (30e6, 1_700)]
        .into_iter()
        .map(|(offered, lost)| udp_row(offered, offered, lost))
        .collect()
}

/// A three-step sweep.
pub fn sweep_run() -> RunResult {
    let trial =
        ThroughputSpec { proto: Proto::Udp, sizes_bytes: vec![1472], duration_s: 2.0, ..ThroughputSpec::default() };
    let mut run = latency_run();
    run.parameters = Parameters::Sweep(SweepSpec { trial, rates_bps: vec![10e6, 20e6, 30e6], settle_s: 1.0 });
    run.command = vec!["linkperf".into(), "sweep".into()];
    run.series = Vec::new();
    run.throughput = udp_rows();
    run
}

/// A search of one payload size that found 10 Mbit/s, with its latency.
pub fn ratesearch_run() -> RunResult {
    use crate::rate_search::ZeroLossRate;
    let mut run = sweep_run();
    let Parameters::Sweep(sweep) = run.parameters.clone() else { unreachable!() };
    run.parameters = Parameters::Ratesearch(RateSearchSpec {
        trial: sweep.trial,
        frames_bytes: Some(vec![1518]),
        loss_tolerance_percent: 0.0,
        min_bps: Some(5e6),
        max_bps: Some(30e6),
        precision: 0.01,
        settle_s: 1.0,
        latency_probes_per_s: 100.0,
    });
    run.throughput.reverse();
    let latency = latency_run().series[0].clone();
    run.rate_search = vec![ZeroLossRate {
        frame_bytes: Some(1518),
        payload_bytes: 1472,
        rate_bps: Some(10e6),
        packets_per_s: Some(10e6 / 8.0 / 1472.0),
        received_bps: run.throughput[2].receiver_bps,
        min_bps: 5e6,
        max_bps: 30e6,
        max_source: "--max".into(),
        trials: 3,
        sender_limited: false,
        complete: true,
        link: None,
        latency: Some(latency),
        latency_load: run.throughput[2].udp.clone(),
        latency_probe_bps: None,
        latency_probes_per_s: None,
        sustainable_bps: None,
        capacity: None,
    }];
    run
}

/// One size idle and under an upload load, with the load's row.
pub fn under_load_run() -> RunResult {
    let mut run = latency_run();
    let Parameters::Latency(spec) = &mut run.parameters else { unreachable!() };
    spec.sessions = 1;
    spec.sizes_bytes = vec![64];
    spec.load =
        Some(LoadSpec { direction: Direction::Upload, streams: 1, proto: Proto::Tcp, lead_s: 2.0, congestion: None });
    let idle = run.series[0].clone();
    let mut h = RttHistogram::new();
    (1..=100u64).for_each(|i| h.record(400_000 + i * 1_000));
    let counters = SeriesCounters { lost: 0, late: 0, elapsed_s: 1.0, complete: true };
    let loaded = Series { load: Some(Direction::Upload), ..Series::new(Some(64), None, &h, counters) };
    run.series = vec![idle, loaded];
    run.throughput = vec![throughput_run().throughput[0].clone()];
    run
}

/// Three searches of full frames that found 112, 112 and 110 datagrams.
pub fn burst_run() -> RunResult {
    use crate::rate_search::BurstResult;
    let mut run = sweep_run();
    let Parameters::Sweep(sweep) = run.parameters.clone() else { unreachable!() };
    run.parameters = Parameters::Burst(BurstSpec {
        trial: sweep.trial,
        frames_bytes: Some(vec![1518]),
        max_datagrams: 1000,
        repeat: 3,
        settle_s: 0.2,
    });
    let mut result = BurstResult {
        frame_bytes: Some(1518),
        payload_bytes: 1472,
        lengths: vec![112, 112, 110],
        min: None,
        typ: None,
        max: None,
        max_datagrams: 1000,
        sender_bps: Some(9.5e9),
        trials: 33,
        complete: true,
    };
    result.summarise();
    run.throughput = Vec::new();
    run.bursts = vec![result];
    run
}

/// One run of every kind of test, for tests that must hold for all of them.
pub fn every_kind_of_run() -> Vec<RunResult> {
    vec![latency_run(), throughput_run(), sweep_run(), ratesearch_run(), under_load_run(), burst_run()]
}
