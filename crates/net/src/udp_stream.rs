//! UDP throughput streams, on both ends: registration, paced sending and receiving with loss, reordering,
//! duplicate and jitter accounting.
//!
//! A client opens a UDP socket per stream and sends REGISTER datagrams to the responder's port until the
//! responder answers ACK from a socket of its own, bound to the same port and connected to the client, so
//! one firewall opening still suffices and each stream has its own socket (and thread) on both ends.
//!
//! A paced sender gives datagram k the due time `anchor + k x gap`, waits for it, and sends. If it falls
//! behind by more than its slack (a stall), it re-anchors the schedule at the present instead of sending
//! the missed datagrams in a burst, and counts the stall; the achieved rate then shows the shortfall. The
//! slack is [`SCHEDULE_SLACK`] or [`CATCH_UP_DATAGRAMS`] gaps, whichever is longer: a sending thread
//! descheduled for a few milliseconds on a busy host catches up with a burst of at most that many
//! datagrams, which any queue able to carry the stream holds.

use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use linkperf_core::datagram_tracker::{DatagramTracker, UdpStats};
use linkperf_core::throughput::{Bins, End, StreamMeter, StreamRecord};
use linkperf_core::ThroughputSpec;
use linkperf_proto::{StreamHeader, StreamProbe, MESSAGE_SIZE_BYTES, STREAM_PROBE_BYTES};
use nix::errno::Errno;
use nix::sys::socket::{
    recvmsg, sendmmsg, setsockopt, sockopt, ControlMessage, ControlMessageOwned, MsgFlags, MultiHeaders,
    SockaddrStorage,
};
use socket2::{Domain, Protocol, Socket, Type};

use crate::{NetError, Target};

/// How far behind its schedule a sender may fall before it re-anchors instead of catching up.
pub const SCHEDULE_SLACK: Duration = Duration::from_millis(1);
/// Most datagrams a paced sender sends back to back to catch up with its schedule after a stall.
pub const CATCH_UP_DATAGRAMS: u32 = 4;
/// How often a blocked receiver wakes to check whether it should stop.
const TICK: Duration = Duration::from_millis(50);
/// How long a client keeps asking for a stream.
const REGISTER_FOR: Duration = Duration::from_secs(3);
/// How long a receiver waits after the last datagram, once data has flowed, before it stops by itself,
/// unless the turns of an alternating test are longer.
const QUIET_END: Duration = Duration::from_secs(1);

/// The quiet time after which a receiver of a test with `interval` stops: a second, or more than two
/// intervals (the other direction's turn) when they are long.
pub fn quiet_end(interval: Duration) -> Duration {
    QUIET_END.max(interval * 2 + Duration::from_millis(500))
}
/// When a sender sends its END datagrams, after its last data: spread out, because a queue that the data
/// just filled drops the first copy, but has room again a moment later. (A lost END only delays the
/// receiver's stop, by its quiet time.)
const END_AFTER: [Duration; 3] = [Duration::ZERO, Duration::from_millis(10), Duration::from_millis(50)];

/// The END datagrams' times after the last data of a sender paced every `gap`: [`END_AFTER`], stretched on
/// a slow schedule so that the queue has sent one and four datagrams of the stream (the room an END needs)
/// before the second and third copies; 2 s at most.
fn end_spacing(gap: Option<Duration>) -> [Duration; 3] {
    let gap = gap.unwrap_or(Duration::ZERO).min(Duration::from_millis(500));
    [END_AFTER[0], END_AFTER[1].max(gap), END_AFTER[2].max(gap * 4)]
}
/// Socket buffers asked for on UDP stream sockets: large, so a short stall of the reader loses nothing.
const BUFFER_BYTES: usize = 4 << 20;

/// How a UDP stream uses the kernel's batching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coalescing {
    /// Send batches as one buffer split by the kernel (UDP GSO), and receive coalesced batches (UDP GRO).
    pub gso: bool,
    /// Most datagrams per send call (1: one `send` per datagram).
    pub batch: usize,
}

/// One UDP stream end: its socket, identity and clock parameters.
pub struct UdpStream<'a> {
    /// The connected socket.
    pub socket: &'a UdpSocket,
    /// The test token.
    pub token: u32,
    /// The stream's header (direction and number).
    pub header: StreamHeader,
    /// Interval and fine-bin lengths.
    pub bins: (u64, u64),
    /// Batching and offloads.
    pub coalescing: Coalescing,
    /// Where a receiver adds the payload bytes it reads, for live interval reports.
    pub moved: Option<&'a std::sync::atomic::AtomicU64>,
    /// A sender's turn, when the directions alternate: it sends only while this is set.
    pub turn: Option<&'a std::sync::atomic::AtomicBool>,
    /// How long a receiver waits after the last datagram, once data has flowed, before it stops by itself
    /// (longer than the other direction's turns when the directions alternate).
    pub quiet_end: Duration,
    /// A sender's most datagrams (a burst): it ends after them, or at its duration if that comes first.
    pub limit: Option<u64>,
}

/// Largest coalesced receive (GRO delivers up to 64 KiB).
const RECEIVE_BYTES: usize = 128 * 1024;

impl UdpStream<'_> {
    /// Sends `size`-byte datagrams for `duration`, at `rate_bps` of UDP payload if given, then END.
    /// `epoch` is the sending clock's origin; `cancelled` is polled a few times a second, and once it says
    /// so the sender stops and returns what it sent (the caller knows why).
    pub fn send(
        &self,
        size: usize,
        rate_bps: Option<f64>,
        duration: Duration,
        epoch: Instant,
        cancelled: &mut dyn FnMut() -> bool,
    ) -> Result<StreamRecord, NetError> {
        let mut meter =
            StreamMeter::new(self.header.index, self.header.flow, End::Sender, Bins::from_ns(self.bins.0, self.bins.1));
        let mut stats = UdpStats::default();
        // A rate too low for a `Duration` (a peer may ask for anything) is a schedule never due.
        let gap = rate_bps
            .filter(|r| *r > 0.0)
            .map(|r| Duration::try_from_secs_f64(size as f64 * 8.0 / r).unwrap_or(Duration::MAX));
        let slack = gap.map_or(SCHEDULE_SLACK, |gap| SCHEDULE_SLACK.max(gap.saturating_mul(CATCH_UP_DATAGRAMS)));
        let (mut batch, mut batching) = self.batch_size(size, rate_bps.filter(|r| *r > 0.0));
        // Errors of the host's own stack come back to the send call (ENOBUFS when its queue is full), so
        // that every datagram of a dropped GSO batch is counted, not one per call as `SndbufErrors` does.
        let _ = setsockopt(self.socket, sockopt::Ipv4RecvErr, &true);
        let _ = setsockopt(self.socket, sockopt::Ipv6RecvErr, &true);
        let mut buffer: Vec<u8> = (0..size * batch).map(|i| (i % 251) as u8).collect();
        let start = Instant::now();
        let (mut anchor, mut scheduled, mut calls) = (start, 0u64, 0u64);
        let (mut next_poll, mut stopped) = (start + TICK, false);
        loop {
            let mut now = Instant::now();
            if now.duration_since(start) >= duration {
                break;
            }
            if self.turn.is_some_and(|t| !t.load(std::sync::atomic::Ordering::Relaxed)) {
                // Not this direction's turn: wait, and start the schedule afresh when it comes (not a stall).
                std::thread::sleep(crate::stream::TURN_POLL);
                (anchor, scheduled) = (Instant::now(), 0);
                continue;
            }
            if let Some(gap) = gap {
                let due = Duration::try_from_secs_f64(gap.as_secs_f64() * scheduled as f64)
                    .ok()
                    .and_then(|offset| anchor.checked_add(offset))
                    .unwrap_or(now + duration);
                if now > due + slack {
                    (anchor, scheduled) = (now, 0);
                    stats.stalls += 1;
                } else if due > now + TICK {
                    // A slow schedule: wait in ticks, so that the duration and a cancellation end the wait.
                    std::thread::sleep(TICK.min(duration.saturating_sub(now.duration_since(start))));
                    if cancelled() {
                        stopped = true;
                        break;
                    }
                    continue;
                } else {
                    crate::clock::wait_until(due);
                    now = due.max(now);
                }
                scheduled += batch as u64;
            }
            // A burst's last call sends only what is left of it.
            let left =
                self.limit.map_or(batch, |limit| limit.saturating_sub(stats.datagrams).min(batch as u64) as usize);
            if left == 0 {
                break;
            }
            let batch_bytes = &mut buffer[..left * size];
            let sent_ns = now.duration_since(epoch).as_nanos() as u32;
            for (k, datagram) in batch_bytes.chunks_mut(size).enumerate() {
                StreamProbe { token: self.token, sequence: stats.datagrams + k as u64, sent_ns }.write_to(datagram);
            }
            let sent = match batching {
                Batching::Messages => send_messages(self.socket, batch_bytes, size),
                _ => self.socket.send(batch_bytes),
            };
            match sent {
                Ok(n) => {
                    stats.datagrams += (n / size) as u64;
                    calls += 1;
                    meter.record(n as u64, Instant::now().duration_since(epoch).as_nanos() as u64);
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    // This host's queue dropped the whole call: sent, and lost here.
                    let dropped = batch_bytes.len() / size;
                    stats.datagrams += dropped as u64;
                    stats.send_drops += dropped as u64;
                    calls += 1;
                    meter.record(batch_bytes.len() as u64, Instant::now().duration_since(epoch).as_nanos() as u64);
                }
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {}
                Err(e) if batch > 1 && e.raw_os_error() == Some(libc::EIO) => {
                    // The path cannot segment (no GSO on the device): fall back to one datagram per call.
                    let _ = setsockopt(self.socket, sockopt::UdpGsoSegment, &0);
                    (batch, batching) = (1, Batching::Single);
                    buffer.truncate(size);
                }
                Err(e) => return Err(udp_error(e)),
            }
            if now >= next_poll {
                next_poll = now + TICK;
                if cancelled() {
                    stopped = true;
                    break;
                }
            }
        }
        // A sender stopped early (Ctrl-C, or the responder's report asked for) keeps what it sent at once,
        // without END (whose spacing can take 2 s): the caller knows why it stopped (its `cancelled` said
        // so), and the receiver stops on its own.
        let ended = Instant::now();
        for after in end_spacing(gap).into_iter().filter(|_| !stopped) {
            crate::clock::wait_until(ended + after);
            self.control(StreamProbe::END, 1);
        }
        stats.datagrams_per_call = if calls > 0 { stats.datagrams as f64 / calls as f64 } else { 0.0 };
        Ok(meter.finish_udp(stats))
    }

    /// Datagrams per send call: 1 without GSO (or if the socket refuses it), else as many as fit the GSO
    /// buffer and the batch limit, and, when paced, span at most [`BATCH_SPAN`] of the schedule.
    fn batch_size(&self, size: usize, rate_bps: Option<f64>) -> (usize, Batching) {
        let schedule =
            ThroughputSpec { batch: self.coalescing.batch.min(u32::MAX as usize) as u32, ..Default::default() };
        let batch = schedule.datagrams_per_call(size as u64, rate_bps) as usize;
        let gso =
            batch > 1 && self.coalescing.gso && setsockopt(self.socket, sockopt::UdpGsoSegment, &(size as i32)).is_ok();
        let batching = match (batch, gso) {
            (1, _) => Batching::Single,
            (_, true) => Batching::Segmented,
            (_, false) => Batching::Messages,
        };
        (batch, batching)
    }

    /// Receives datagrams until END, until `stop` says so, or until the sender has been quiet for a second
    /// after data flowed. `first_byte` is shared by the streams measured on this host: their clock starts at
    /// the first datagram any of them receives. With coalescing, one receive may return many datagrams.
    pub fn receive(
        &self,
        first_byte: &std::sync::OnceLock<Instant>,
        stop: &mut dyn FnMut() -> bool,
    ) -> Result<StreamRecord, NetError> {
        let mut meter = StreamMeter::new(
            self.header.index,
            self.header.flow,
            End::Receiver,
            Bins::from_ns(self.bins.0, self.bins.1),
        );
        let mut tracker = DatagramTracker::new(self.bins.0);
        let mut buffer = vec![0u8; RECEIVE_BYTES];
        self.socket.set_read_timeout(Some(TICK)).map_err(|e| NetError::io("configuring a UDP stream", e))?;
        let _ = setsockopt(self.socket, sockopt::RxqOvfl, &1);
        if self.coalescing.gso {
            let _ = setsockopt(self.socket, sockopt::UdpGroSegment, &true);
        }
        let _ = setsockopt(self.socket, sockopt::ReceiveTimestampns, &true);
        let mut cmsg = nix::cmsg_space!(i32, u32, nix::sys::time::TimeSpec);
        let (mut last_arrival, mut socket_drops) = (None::<Instant>, 0u64);
        let mut kernel_base: Option<i128> = None;
        let mut next_poll = Instant::now() + TICK;
        loop {
            let received = {
                let mut iov = [IoSliceMut::new(&mut buffer)];
                recvmsg::<()>(self.socket.as_raw_fd(), &mut iov, Some(&mut cmsg), MsgFlags::empty()).map(|m| {
                    let (mut segment, mut stamp) = (None, None);
                    for c in m.cmsgs().into_iter().flatten() {
                        match c {
                            ControlMessageOwned::UdpGroSegments(size) => segment = Some(size as usize),
                            ControlMessageOwned::RxqOvfl(drops) => socket_drops = socket_drops.max(u64::from(drops)),
                            ControlMessageOwned::ScmTimestampns(ts) => {
                                stamp = Some(i128::from(ts.tv_sec()) * 1_000_000_000 + i128::from(ts.tv_nsec()))
                            }
                            _ => {}
                        }
                    }
                    (m.bytes, segment, stamp)
                })
            };
            match received {
                Ok((n, segment, stamp)) => {
                    let now = Instant::now();
                    let segment = segment.filter(|&s| s > 0).unwrap_or(n.max(1));
                    let origin = *first_byte.get_or_init(|| now);
                    let at_ns = now.saturating_duration_since(origin).as_nanos() as u64;
                    // The kernel's receive time, on the stream's clock from the first stamped arrival: a
                    // reading thread descheduled on a busy host would otherwise look like a growing queue.
                    let arrived_ns = stamp.map_or(at_ns, |kernel| {
                        let base = *kernel_base.get_or_insert(kernel - i128::from(at_ns));
                        u64::try_from(kernel - base).unwrap_or(0)
                    });
                    match self.account(&buffer[..n], segment, (at_ns, arrived_ns), &mut tracker, &mut meter) {
                        Arrival::End => break,
                        Arrival::Data => last_arrival = Some(now),
                        Arrival::Other => {}
                    }
                    // Data flowing without pause must not hide a request to stop (Ctrl-C on a download).
                    if now >= next_poll {
                        next_poll = now + TICK;
                        if stop() {
                            break;
                        }
                    }
                }
                Err(Errno::EAGAIN | Errno::EINTR) => {
                    if stop() || last_arrival.is_some_and(|t| t.elapsed() > self.quiet_end) {
                        break;
                    }
                }
                Err(e) => return Err(udp_error(std::io::Error::from(e))),
            }
        }
        let stats = UdpStats { socket_drops, ..tracker.stats() };
        Ok(meter.finish_udp(stats))
    }

    /// Accounts for one receive: `bytes` holds one datagram, or several of `segment` bytes each (the last
    /// may be shorter).
    /// `at_ns` is when this thread read them, `arrived_ns` when the kernel received them (both on the
    /// stream's clock).
    fn account(
        &self,
        bytes: &[u8],
        segment: usize,
        (at_ns, arrived_ns): (u64, u64),
        tracker: &mut DatagramTracker,
        meter: &mut StreamMeter,
    ) -> Arrival {
        let mut arrival = Arrival::Other;
        let mut data_bytes = 0u64;
        for datagram in bytes.chunks(segment) {
            let Some(probe) = StreamProbe::read_from(datagram).filter(|p| p.token == self.token) else { continue };
            match probe.sequence {
                StreamProbe::END => return Arrival::End,
                StreamProbe::REGISTER => self.control(StreamProbe::ACK, 1),
                _ if probe.is_data() => {
                    tracker.record(probe.sequence, probe.sent_ns, arrived_ns, datagram.len() as u64);
                    data_bytes += datagram.len() as u64;
                    arrival = Arrival::Data;
                }
                _ => {}
            }
        }
        if data_bytes > 0 {
            meter.record(data_bytes, at_ns);
            if let Some(moved) = self.moved {
                moved.fetch_add(data_bytes, std::sync::atomic::Ordering::Relaxed);
            }
        }
        arrival
    }

    /// Sends `copies` control datagrams with sequence number `sequence`.
    fn control(&self, sequence: u64, copies: usize) {
        let mut datagram = [0u8; STREAM_PROBE_BYTES];
        StreamProbe { token: self.token, sequence, sent_ns: 0 }.write_to(&mut datagram);
        for _ in 0..copies {
            let _ = self.socket.send(&datagram);
        }
    }
}

/// How a sender hands datagrams to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batching {
    /// One `send` per datagram.
    Single,
    /// One `send` of a buffer the kernel cuts into datagrams (UDP GSO).
    Segmented,
    /// One `sendmmsg` of several datagrams, each through the stack on its own.
    Messages,
}

/// Sends the `size`-byte datagrams of `buffer` in one `sendmmsg` call; returns the bytes sent.
fn send_messages(socket: &UdpSocket, buffer: &[u8], size: usize) -> std::io::Result<usize> {
    let slices: Vec<[IoSlice; 1]> = buffer.chunks(size).map(|d| [IoSlice::new(d)]).collect();
    let addresses: Vec<Option<SockaddrStorage>> = vec![None; slices.len()];
    let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(slices.len(), None);
    let control: [ControlMessage; 0] = [];
    let results = sendmmsg(socket.as_raw_fd(), &mut headers, &slices, &addresses, control, MsgFlags::empty())
        .map_err(std::io::Error::from)?;
    Ok(results.map(|r| r.bytes).sum())
}

/// What one receive held.
enum Arrival {
    /// The sender's END.
    End,
    /// At least one data datagram.
    Data,
    /// Nothing of the stream's data.
    Other,
}

/// Client side: opens a stream's socket (with `target`'s socket options) and registers it with the
/// responder at `responder`.
pub fn connect(
    target: &Target,
    responder: SocketAddr,
    token: u32,
    header: StreamHeader,
) -> Result<UdpSocket, NetError> {
    let socket =
        target.connect_udp(responder).map_err(|source| NetError::Connect { address: responder.to_string(), source })?;
    large_buffers(&socket);
    register(&socket, token, header)?;
    Ok(socket)
}

fn register(socket: &UdpSocket, token: u32, header: StreamHeader) -> Result<(), NetError> {
    let mut request = [0u8; STREAM_PROBE_BYTES + MESSAGE_SIZE_BYTES];
    StreamProbe { token, sequence: StreamProbe::REGISTER, sent_ns: 0 }.write_to(&mut request);
    request[STREAM_PROBE_BYTES..].copy_from_slice(&header.encode());
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| NetError::io("configuring a UDP stream", e))?;
    let started = Instant::now();
    let mut reply = [0u8; 2048];
    while started.elapsed() < REGISTER_FOR {
        socket.send(&request).map_err(udp_error)?;
        match socket.recv(&mut reply) {
            Ok(n)
                if StreamProbe::read_from(&reply[..n])
                    .is_some_and(|p| p.token == token && p.sequence == StreamProbe::ACK) =>
            {
                return Ok(())
            }
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(e) => return Err(udp_error(e)),
        }
    }
    Err(NetError::Timeout {
        what: format!(
            "the responder's answer to UDP stream registration (is UDP port {} open?)",
            socket.peer_addr().map(|a| a.port()).unwrap_or(0)
        ),
        timeout_s: REGISTER_FOR.as_secs_f64(),
    })
}

/// Responder side: a socket on the responder's own address and port, connected to the client, so that the
/// client's datagrams reach it rather than the shared socket.
pub fn accept(local: SocketAddr, client: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if local.is_ipv6() {
        socket.set_only_v6(false)?;
    }
    socket.set_reuse_address(true)?;
    socket.bind(&local.into())?;
    socket.connect(&client.into())?;
    let socket = UdpSocket::from(socket);
    large_buffers(&socket);
    Ok(socket)
}

/// Asks for large socket buffers, beyond `net.core.rmem_max`/`wmem_max` where the process may
/// (`CAP_NET_ADMIN`), so that a short stall of the reading thread loses nothing.
fn large_buffers(socket: &UdpSocket) {
    let forced = setsockopt(socket, sockopt::RcvBufForce, &BUFFER_BYTES).is_ok()
        && setsockopt(socket, sockopt::SndBufForce, &BUFFER_BYTES).is_ok();
    if !forced {
        let _ = setsockopt(socket, sockopt::RcvBuf, &BUFFER_BYTES);
        let _ = setsockopt(socket, sockopt::SndBuf, &BUFFER_BYTES);
    }
}

/// Acknowledges a registration from the stream's own socket.
pub fn acknowledge(socket: &UdpSocket, token: u32) {
    let mut datagram = [0u8; STREAM_PROBE_BYTES];
    StreamProbe { token, sequence: StreamProbe::ACK, sent_ns: 0 }.write_to(&mut datagram);
    let _ = socket.send(&datagram);
}

/// Reads a registration datagram: its probe and stream header.
pub fn registration(datagram: &[u8]) -> Option<(StreamProbe, StreamHeader)> {
    let probe = StreamProbe::read_from(datagram).filter(|p| p.sequence == StreamProbe::REGISTER)?;
    let header = datagram.get(STREAM_PROBE_BYTES..STREAM_PROBE_BYTES + MESSAGE_SIZE_BYTES)?;
    let header = StreamHeader::decode([header[0], header[1], header[2], header[3]])?;
    Some((probe, header))
}

fn udp_error(e: std::io::Error) -> NetError {
    match e.kind() {
        ErrorKind::ConnectionRefused => NetError::PeerClosed(" (its UDP port is closed: ICMP port unreachable)".into()),
        _ => NetError::io("moving UDP stream data", e),
    }
}
