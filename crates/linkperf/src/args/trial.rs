//! Arguments shared by the commands that run series of UDP trials (`sweep`, `ratesearch`): direction,
//! streams, pauses, batching and the link to compare with.

use std::time::Duration;

use clap::{Args, ValueEnum};
use linkperf_core::{Direction, Proto, ThroughputSpec};

use super::value;
use crate::exit::UsageError;

/// How the trials of a sweep or search run.
#[derive(Debug, Clone, Args)]
pub struct TrialArgs {
    /// Which way the datagrams flow; bidir offers the rate both ways at once (a trial passes only if both
    /// ways do).
    #[arg(long, value_enum, default_value = "up")]
    pub direction: TrialDirection,
    /// Parallel streams per direction; the offered rate is split evenly over them.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub streams: u16,
    /// Pause after each trial, so that queues drain before the next [default: 1s; burst: 200ms].
    #[arg(long, value_parser = value::duration)]
    pub settle: Option<Duration>,
    #[command(flatten)]
    pub link: super::link::LinkArgs,
    #[command(flatten)]
    pub batching: super::link::BatchArgs,
}

/// The directions a trial can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TrialDirection {
    /// The client sends.
    Up,
    /// The responder sends.
    Down,
    /// Both at once.
    Bidir,
}

impl TrialArgs {
    /// The pause after each trial, in seconds: as given, or `default`.
    pub fn settle_s(&self, default: Duration) -> f64 {
        self.settle.unwrap_or(default).as_secs_f64()
    }

    /// The UDP trial these arguments describe, for `sizes` and trials of `duration`, with its rate left
    /// to the caller.
    pub fn trial(&self, sizes: Vec<u64>, duration: Duration) -> Result<ThroughputSpec, UsageError> {
        if self.streams == 0 || self.streams > 128 {
            return Err(UsageError("--streams must be between 1 and 128".into()));
        }
        if duration < Duration::from_millis(100) {
            return Err(UsageError("a trial must last at least 100ms".into()));
        }
        super::throughput::check_sizes(Proto::Udp, &sizes)?;
        let phase = match self.direction {
            TrialDirection::Up => Direction::Upload,
            TrialDirection::Down => Direction::Download,
            TrialDirection::Bidir => Direction::Bidirectional,
        };
        let duration_s = duration.as_secs_f64();
        Ok(ThroughputSpec {
            proto: Proto::Udp,
            phases: vec![phase],
            streams: self.streams,
            sizes_bytes: sizes,
            duration_s,
            // Intervals of a second at most: they also set how long a receiver waits for a lost END.
            interval_s: duration_s.min(1.0),
            omit_intervals: 0,
            buffer_bytes: None,
            congestion: None,
            discard: false,
            rate: None,
            link: Some(self.link.spec()),
            gso: !self.batching.no_gso,
            batch: self.batching.batch.max(1),
            datagrams: None,
        })
    }
}

/// The datagram sizes of the RFC 2544 commands: Ethernet frame sizes, or UDP payloads.
#[derive(Debug, Clone, Args)]
pub struct FrameArgs {
    /// Ethernet frame sizes in bytes, header and FCS included (RFC 2544) [default: ratesearch
    /// 64,128,256,512,1024,1280,1518; burst 1518].
    #[arg(short, long, value_name = "FRAMES", value_parser = value::size_list, conflicts_with = "payload")]
    pub size: Option<value::SizeList>,
    /// UDP payload sizes in bytes instead of frame sizes (at least 16).
    #[arg(long, value_name = "SIZES", value_parser = value::size_list)]
    pub payload: Option<value::SizeList>,
}

impl FrameArgs {
    /// UDP payloads from the frame sizes (or `default_frames` when neither list is given) over IPv4 or
    /// IPv6, or the payloads as given; with the frame sizes when they were the input.
    pub fn payloads(&self, default_frames: &[u64], ipv6: bool) -> Result<(Vec<u64>, Option<Vec<u64>>), UsageError> {
        payloads(self.size.as_ref(), self.payload.as_ref(), default_frames, ipv6)
    }
}

fn payloads(
    frames: Option<&value::SizeList>,
    payloads: Option<&value::SizeList>,
    default_frames: &[u64],
    ipv6: bool,
) -> Result<(Vec<u64>, Option<Vec<u64>>), UsageError> {
    use linkperf_core::rate_search::frame_payload;
    if let Some(payloads) = payloads {
        return Ok((payloads.0.clone(), None));
    }
    let frames = frames.map(|s| s.0.clone()).unwrap_or_else(|| default_frames.to_vec());
    let payloads = frames
        .iter()
        .map(|&frame| {
            frame_payload(frame, ipv6)
                .filter(|&p| p as usize >= linkperf_proto::STREAM_PROBE_BYTES)
                .ok_or_else(|| frame_error(frame, ipv6))
        })
        .collect::<Result<Vec<u64>, UsageError>>()?;
    Ok((payloads, Some(frames)))
}

fn frame_error(frame: u64, ipv6: bool) -> UsageError {
    let headers = linkperf_core::rate_search::frame_payload(u64::MAX, ipv6).map_or(0, |p| u64::MAX - p);
    let smallest = headers + linkperf_proto::STREAM_PROBE_BYTES as u64;
    UsageError(format!(
        "a {frame}-byte frame leaves no room for the {}-byte stream header after {headers} bytes of Ethernet, IP{} and UDP headers: the smallest frame is {smallest} bytes (or give --payload sizes)",
        linkperf_proto::STREAM_PROBE_BYTES,
        if ipv6 { "v6" } else { "v4" }
    ))
}
