//! The body of every fuzz target, as a plain function of the input bytes: what it decodes, and the
//! property it checks (a panic is a finding). Each target in `fuzz_targets/` is one line calling its
//! function here, and the stable test `crates/linkperf/tests/fuzz_inputs.rs` includes this file and
//! replays every committed input (`seeds/TARGET/`, `findings/TARGET/`) through the same functions, so CI
//! checks the corpus and the findings without a nightly toolchain or cargo-fuzz.
//!
//! It depends on the decoders' crates and `serde_json` only (no libFuzzer), and never opens a socket.

use std::io::{ErrorKind, Read};
use std::time::Duration;

use linkperf_core::datagram_tracker::DatagramTracker;
use linkperf_core::throughput::{sum_streams, Bins, End, Flow, StreamMeter, MAX_BINS};
use linkperf_core::{RttHistogram, RunResult};
use linkperf_proto::auth::{proof, verify, Side};
use linkperf_proto::frame::{decode_body, encode_frame, read_frame_up_to, FrameReader};
use linkperf_proto::limits::{MAX_INTERVAL, MIN_INTERVAL};
use linkperf_proto::session::{Action, Answer, ControlSession, Session, SessionConfig};
use linkperf_proto::{ErrorCode, Limits, Message, PlannedTest, Preamble, ProbeHeader, StreamHeader, StreamProbe};
use linkperf_proto::{TestRequest, MAX_CLIENT_FRAME_BYTES, MAX_FRAME_BYTES, PREAMBLE_BYTES};

/// A target's check: returns when the input passes, panics when it does not.
pub type Check = fn(&[u8]);

/// Every target by name, with its check: what `fuzz/run.sh` runs and what the replay test walks.
pub const TARGETS: [(&str, Check); 10] = [
    ("preamble", preamble),
    ("frame", frame),
    ("session", session),
    ("message", message),
    ("test_request", test_request),
    ("report", report),
    ("probe", probe),
    ("auth", auth),
    ("histogram", histogram),
    ("run_result", run_result),
];

/// The first bytes of every connection: the 12-byte preamble and the 4-byte data header after it.
/// Decoding never panics, and what decodes encodes back to the same bytes (but the reserved byte, which
/// decoding ignores).
pub fn preamble(data: &[u8]) {
    let _ = Preamble::read_from(&mut &data[..]);
    if let Some(bytes) = data.get(..PREAMBLE_BYTES).and_then(|b| <[u8; PREAMBLE_BYTES]>::try_from(b).ok()) {
        if let Ok(preamble) = Preamble::decode(&bytes) {
            let again = preamble.encode();
            assert_eq!((&again[..7], &again[8..]), (&bytes[..7], &bytes[8..]), "{preamble:?}");
        }
    }
    if let Some(header) = data.get(PREAMBLE_BYTES..PREAMBLE_BYTES + 4).and_then(|h| <[u8; 4]>::try_from(h).ok()) {
        if let Some(decoded) = StreamHeader::decode(header) {
            assert_eq!(StreamHeader::decode(decoded.encode()), Some(decoded));
        }
    }
}

/// Returns its bytes `piece` at a time, with a timeout (`WouldBlock`) before each piece.
struct Pieces<'a> {
    bytes: &'a [u8],
    piece: usize,
    timeout_next: bool,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.timeout_next = !self.timeout_next;
        if self.timeout_next {
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = self.piece.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// Control framing as a peer's bytes arrive: a length, then a JSON body, in pieces of any size with read
/// timeouts between them. The first byte of the input picks the piece size; the rest is the stream.
/// Reading never panics, and a timeout never loses the reader's place: read in pieces, the stream gives
/// the same messages, then the same kind of error, as read whole frame by frame.
pub fn frame(data: &[u8]) {
    let Some((&piece, stream)) = data.split_first() else { return };
    let mut source = Pieces { bytes: stream, piece: usize::from(piece).max(1), timeout_next: false };
    let mut reader = FrameReader::new();
    let mut in_pieces = Vec::new();
    // Each call makes progress, times out (once per piece) or ends the stream: this many calls suffice.
    let in_pieces_end = (0..4 * stream.len() + 8).find_map(|_| match reader.next(&mut source, MAX_FRAME_BYTES) {
        Ok(Some(message)) => {
            in_pieces.push(message);
            None
        }
        Ok(None) => None,
        Err(e) => Some(std::mem::discriminant(&e)),
    });
    let mut whole = stream;
    let mut at_once = Vec::new();
    let at_once_end = loop {
        match read_frame_up_to(&mut whole, MAX_FRAME_BYTES) {
            Ok(message) => at_once.push(message),
            Err(e) => break std::mem::discriminant(&e),
        }
    };
    assert_eq!(in_pieces, at_once, "the same messages in pieces of {piece} bytes as whole");
    assert_eq!(in_pieces_end, Some(at_once_end), "the same end in pieces of {piece} bytes as whole");
}

/// A control frame's body, every message type: decoding never panics, and what decodes survives encoding
/// and decoding again unchanged (both ends read what the other wrote).
pub fn message(data: &[u8]) {
    if let Ok(message) = decode_body(data) {
        let frame = encode_frame(&message);
        let again = decode_body(&frame[4..]).expect("an encoded message decodes");
        assert_eq!(again, message);
    }
}

/// A test request as the responder takes it. `Limits::admit` either refuses it with a typed reason (an
/// `over_limit` or `unsupported` error whose text says why) or plans a test whose every value is within
/// the limits, and which the same limits admit again unchanged. Whatever the request's numbers, even those
/// the limits refuse, the stream meters built from them (as the responder's throughput state builds them)
/// keep at most `MAX_BINS` bins: no value can make them allocate without bound or search for long.
pub fn test_request(data: &[u8]) {
    let Ok(request) = serde_json::from_slice::<TestRequest>(data) else { return };
    let limited = Limits { max_udp_rate_bps: Some(100e6), allow_spin: false, ..Limits::default() };
    for limits in [Limits::default(), limited] {
        match limits.admit(&request) {
            Ok(plan) => check_plan(&limits, &plan),
            Err(refusal) => {
                assert!(matches!(refusal.code(), ErrorCode::OverLimit | ErrorCode::Unsupported), "{refusal:?}");
                assert!(!refusal.to_string().is_empty(), "{refusal:?} says why");
            }
        }
    }
    if let TestRequest::Throughput { duration_s, interval_s, .. } = request {
        // As `BulkState::for_request` does (crates/net/src/responder/bulk.rs), with the raw numbers.
        let duration = Duration::try_from_secs_f64(duration_s).unwrap_or(Duration::ZERO);
        let interval = Duration::try_from_secs_f64(interval_s).unwrap_or(Duration::MAX);
        meter_stays_bounded(Bins::for_run(interval, duration), duration);
    }
}

fn check_plan(limits: &Limits, plan: &linkperf_proto::TestPlan) {
    assert!(plan.planned.is_none_or(|p| p <= limits.max_duration), "{plan:?}");
    assert!(plan.message_bytes() <= limits.max_message_bytes, "{plan:?}");
    if plan.test != PlannedTest::Connect {
        assert!((1..=limits.max_streams_per_test).contains(&plan.connections), "{plan:?}");
    }
    if let PlannedTest::Throughput(throughput) = &plan.test {
        assert!((MIN_INTERVAL..=MAX_INTERVAL).contains(&throughput.interval.get()), "{plan:?}");
        assert!(throughput.duration <= limits.max_duration, "{plan:?}");
        let rate = throughput.rate.map(|r| r.bps() * f64::from(plan.connections));
        if let (Some(rate), Some(limit)) = (rate, limits.max_udp_rate_bps) {
            assert!(rate <= limit * (1.0 + 1e-9), "{plan:?} over {limit} bit/s");
        }
        meter_stays_bounded(Bins::for_run(throughput.interval.get(), throughput.duration), throughput.duration);
    }
    assert_eq!(limits.admit(&plan.to_request()).as_ref(), Ok(plan), "a plan is admitted again unchanged");
}

/// A meter on `bins` counting bytes at its start, a second in, at the end of `duration` and far past it.
fn meter_stays_bounded(bins: Bins, duration: Duration) {
    let mut meter = StreamMeter::new(0, Flow::Upload, End::Receiver, bins);
    let end = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    for at_ns in [0, 1_000_000_000, end, end.saturating_mul(4), u64::MAX] {
        meter.record(1, at_ns);
    }
    let record = meter.finish(None);
    assert!(record.bins.len() <= MAX_BINS, "{} bins for {bins:?}", record.bins.len());
}

/// A responder's report of a throughput test, as a client reads it from a possibly hostile responder:
/// decoded, then summed over the bins in which every stream was transferring. The first input byte is the
/// number of intervals to omit. Neither may panic whatever the bins, intervals and times claim.
pub fn report(data: &[u8]) {
    let Some((&omit, body)) = data.split_first() else { return };
    if let Ok(Message::Report { streams, .. }) = decode_body(body) {
        if let Some(sum) = sum_streams(&streams, usize::from(omit)) {
            assert!(sum.window_s >= 0.0, "{sum:?}");
        }
    }
}

/// UDP datagrams reaching the responder's shared port or a stream socket: the latency probe header, the
/// throughput stream header, a REGISTER datagram, and the receiver's loss and reorder tracking fed with the
/// sequence numbers and send times they carry. The input is a run of datagrams, 20 bytes each. Headers that
/// decode encode back to their bytes, and the tracker never counts more datagrams than it was given.
pub fn probe(data: &[u8]) {
    let mut tracker = DatagramTracker::new(1_000_000_000);
    let mut data_datagrams = 0;
    for (k, datagram) in data.chunks(20).enumerate() {
        if let Some(header) = ProbeHeader::read_from(datagram) {
            let mut again = [0u8; linkperf_proto::PROBE_HEADER_BYTES];
            assert!(header.write_to(&mut again));
            assert_eq!(&again[..], &datagram[..again.len()]);
        }
        let _ = linkperf_net::udp_stream::registration(datagram);
        if let Some(probe) = StreamProbe::read_from(datagram).filter(StreamProbe::is_data) {
            tracker.record(probe.sequence, probe.sent_ns, k as u64 * 1_000, datagram.len() as u64);
            data_datagrams += 1;
        }
    }
    assert_eq!(tracker.stats().datagrams, data_datagrams);
}

/// The authentication fields a peer controls: the client's nonce (in its hello) and its proof (in auth),
/// checked by the responder. Input: nonce, a 0xff byte, then the proof. Checking never panics and accepts
/// no proof but the right one.
pub fn auth(data: &[u8]) {
    const KEY: &[u8] = b"fuzzing key";
    const CHALLENGE: &str = "00112233445566778899aabbccddeeff";
    let (nonce, claimed) = match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let nonce = String::from_utf8_lossy(nonce);
    let claimed = String::from_utf8_lossy(claimed);
    let right = proof(KEY, Side::Client, CHALLENGE, &nonce);
    let accepted = verify(KEY, Side::Client, CHALLENGE, &nonce, &claimed);
    assert_eq!(accepted, claimed.eq_ignore_ascii_case(&right), "proof {claimed:?} for nonce {nonce:?}");
}

/// The latency histogram text of a stored or imported run (HdrHistogram V2, deflated, base64): decoding
/// never panics, what decodes answers every statistic, and encodes to a text that decodes to the same
/// figures.
pub fn histogram(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(histogram) = RttHistogram::decode(text) else { return };
    let figures = |h: &RttHistogram| {
        let quantiles: Vec<_> = [0.0, 0.5, 0.9, 0.99, 0.999, 1.0].into_iter().map(|q| h.quantile_ns(q)).collect();
        (h.count(), h.min_ns(), h.max_ns(), h.mean_ns().map(f64::to_bits), quantiles)
    };
    let _ = histogram.stddev_ns();
    let again = RttHistogram::decode(&histogram.encode()).expect("an encoded histogram decodes");
    assert_eq!(figures(&again), figures(&histogram));
}

/// A run result as `linkperf import` reads it from a file (a test's --json output or an export): decoding
/// never panics, and a decoded result encodes to a text that decodes and encodes to the same text.
pub fn run_result(data: &[u8]) {
    let Ok(result) = serde_json::from_slice::<RunResult>(data) else { return };
    let text = serde_json::to_string(&result).expect("a result encodes");
    let again: RunResult = serde_json::from_str(&text).expect("an encoded result decodes");
    assert_eq!(serde_json::to_string(&again).expect("a result encodes"), text);
}

/// A control stream from a peer, as the responder's session reads it after the preamble: the first byte
/// picks a piece size and, with its top bit, a responder that requires a key; the rest is the stream. Fed
/// whole or in pieces (each answered by the driver before the next comes), the session sends the same
/// bytes and asks the same actions: where the stream is cut never changes what a frame means. Every frame
/// it sends is one a client reads.
pub fn session(data: &[u8]) {
    let Some((&first, stream)) = data.split_first() else { return };
    let keyed = first & 0x80 != 0;
    let piece = usize::from(first & 0x7f).max(1);
    let t0 = std::time::Instant::now();
    let whole = drive_session(t0, keyed, [stream]);
    // A stream longer than the input a session holds while a reply is pending is cut off whole, never in
    // small pieces: there, only the absence of panics is checked.
    if stream.len() > 2 * (MAX_FRAME_BYTES as usize + 4) {
        return;
    }
    let pieces = drive_session(t0, keyed, stream.chunks(piece));
    assert_eq!(whole, pieces, "the same session whole and in pieces of {piece} bytes");
    let mut sent = whole.0.as_slice();
    while !sent.is_empty() {
        read_frame_up_to(&mut sent, MAX_CLIENT_FRAME_BYTES).expect("a client reads what the session sends");
    }
}

/// Feeds `pieces` to a fresh session at one instant, `t0`, answering its actions as the responder would (a slot,
/// a token per test, an empty report), then closes it. Returns the bytes sent and the actions asked.
fn drive_session<'a>(
    t0: std::time::Instant,
    keyed: bool,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<u8>, Vec<Action>) {
    let auth = keyed.then(|| (b"fuzzing key".to_vec(), "00112233445566778899aabbccddeeff".to_string()));
    let config = SessionConfig::new(Limits::default(), auth, "fuzz".into(), vec!["latency".into()]);
    let mut session = ControlSession::new(config, t0);
    let (mut sent, mut asked, mut tokens) = (Vec::new(), Vec::new(), 0u32);
    let mut drain = |session: &mut ControlSession, sent: &mut Vec<u8>, asked: &mut Vec<Action>| {
        while let Some(action) = session.poll_action() {
            asked.push(action.clone());
            let answer = match action {
                Action::Admit { .. } => Answer::Admitted { host: Default::default() },
                Action::StartTest { .. } => {
                    tokens += 1;
                    Answer::TestStarted { token: tokens }
                }
                Action::Report { .. } => Answer::Report { streams: Vec::new(), counters: None },
                _ => continue,
            };
            session.answer(t0, answer);
        }
        while let Some(bytes) = session.poll_transmit() {
            sent.extend_from_slice(&bytes);
        }
    };
    for piece in pieces {
        session.handle_input(t0, piece);
        drain(&mut session, &mut sent, &mut asked);
    }
    session.handle_close(t0);
    drain(&mut session, &mut sent, &mut asked);
    (sent, asked)
}
