//! Latency under load (bufferbloat): each message size's latency series runs twice, first on an idle path,
//! then beside a bulk transfer that saturates it. The load starts `lead_s` before the loaded series, so
//! that the queues along the path have filled, and ends `lead_s` after it.

use std::time::Duration;

use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::{LatencySpec, Series};

use crate::latency::run_latency;
use crate::observer::{CancelOnly, Observer};
use crate::run::MeasuredRun;
use crate::sweep::settle;
use crate::throughput::run_throughput;
use crate::{NetError, Target};

/// What a latency test under load measured.
pub struct LoadedRun {
    /// The series, per size idle then loaded (marked with their load).
    pub latency: MeasuredRun<Series>,
    /// The load's throughput rows, one set per size.
    pub load: Vec<ThroughputSeries>,
}

/// Runs `spec` (whose `load` is set) idle and under load, size by size. Fails outright only when nothing
/// was measured.
pub fn run_latency_under_load(
    target: &Target,
    key: Option<&[u8]>,
    spec: &LatencySpec,
    observer: &dyn Observer,
) -> Result<LoadedRun, NetError> {
    let Some(load) = spec.load.clone() else {
        return Ok(LoadedRun { latency: run_latency(target, key, spec, observer)?, load: Vec::new() });
    };
    let series_s = spec.stop.duration().map_or(10.0, |d| d.as_secs_f64());
    let bulk = load.throughput(series_s);
    let mut out = LoadedRun { latency: MeasuredRun::new(Default::default()), load: Vec::new() };
    for &size in &spec.sizes_bytes {
        let one = LatencySpec { sizes_bytes: vec![size], load: None, ..spec.clone() };
        let idle = match run_latency(target, key, &one, observer) {
            Err(error) if out.latency.series.is_empty() => return Err(error),
            Err(error) => {
                out.latency.error = Some(error);
                return Ok(out);
            }
            Ok(idle) => idle,
        };
        out.latency.responder = idle.responder.clone();
        out.latency.client = idle.client.clone();
        if !absorb(&mut out.latency, idle) {
            return Ok(out);
        }
        // The idle series warmed the path up; under load, warm-up round trips would only eat into the load's
        // time (a hundred of them take 40 s behind a 400 ms queue).
        let loaded_spec = LatencySpec { warmup: 0, ..one.clone() };
        let (carried, loaded) = std::thread::scope(|scope| {
            let carrying = scope.spawn(|| run_throughput(target, key, &bulk, &CancelOnly(observer)));
            let loaded = match settle(Duration::from_secs_f64(load.lead_s), &CancelOnly(observer)) {
                true => Err(NetError::Interrupted),
                false => run_latency(target, key, &loaded_spec, observer),
            };
            let carried = carrying.join().unwrap_or_else(|_| Err(NetError::Invalid("the load thread failed".into())));
            (carried, loaded)
        });
        let mut loaded = loaded?;
        loaded.series.iter_mut().for_each(|s| s.load = Some(load.direction));
        let carried = carried?;
        out.load.extend(carried.series);
        out.latency.warnings.extend(carried.warnings);
        let load_error = carried.error;
        if !absorb(&mut out.latency, loaded) {
            return Ok(out);
        }
        if let Some(error) = load_error {
            out.latency.error = Some(error);
            return Ok(out);
        }
    }
    Ok(out)
}

/// Adds a run's series to `into`; `false` (with the error kept) when it stopped early.
fn absorb(into: &mut MeasuredRun<Series>, run: MeasuredRun<Series>) -> bool {
    into.series.extend(run.series);
    into.warnings.extend(run.warnings);
    match run.error {
        Some(error) => {
            into.error = Some(error);
            false
        }
        None => true,
    }
}
