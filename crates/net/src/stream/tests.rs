//! The engine over socket pairs: each test names the part it checks (sender, receiver, meter, turn,
//! end of stream).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use linkperf_core::throughput::{Bins, End, Flow};
use socket2::Socket;

use super::*;

fn pair() -> (Socket, Socket) {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    (Socket::from(a), Socket::from(b))
}

fn bins() -> Bins {
    Bins::for_run(Duration::from_millis(100), Duration::from_millis(300))
}

fn send_plan(duration: Duration) -> SendPlan {
    SendPlan { index: 0, flow: Flow::Upload, bins: bins(), write_bytes: 4096, duration, stall: Duration::from_secs(5) }
}

fn receive_plan() -> ReceivePlan {
    ReceivePlan { index: 0, flow: Flow::Upload, bins: bins(), discard: false, stall: Some(Duration::from_secs(5)) }
}

#[test]
fn the_receiver_meters_every_byte_the_sender_wrote() {
    let (a, b) = pair();
    let (sending, receiving) = (Origin::at(Instant::now()), Origin::unset());
    let moved = AtomicU64::new(0);
    let (sent, received) = std::thread::scope(|scope| {
        let receiver = scope.spawn(|| {
            let shared = Shared { origin: &receiving, moved: Some(&moved), turn: None };
            receive(&b, &receive_plan(), shared, |_| false)
        });
        let shared = Shared { origin: &sending, moved: None, turn: None };
        let sent = send(&a, &send_plan(Duration::from_millis(300)), shared, |_| false);
        end::finish_sending(&a, &sent.record, Duration::from_secs(5));
        (sent, receiver.join().unwrap())
    });
    assert!(matches!(sent.ending, Ending::Completed), "{:?}", sent.ending);
    assert!(matches!(received.ending, Ending::Completed), "{:?}", received.ending);
    assert!(sent.record.bytes > 0);
    assert_eq!(received.record.bytes, sent.record.bytes, "the receiver read all that was written");
    assert_eq!(received.record.bins.iter().sum::<u64>(), received.record.bytes, "the meter binned every read");
    assert_eq!(moved.load(Ordering::Relaxed), received.record.bytes);
    assert_eq!((sent.record.end, received.record.end), (End::Sender, End::Receiver));
    // The sender ran for its duration (300 ms) and no longer than a drain beyond it.
    let span_ms = (sent.record.last_ns - sent.record.first_ns) / 1_000_000;
    assert!((250..2000).contains(&span_ms), "{span_ms} ms");
}

#[test]
fn a_stop_check_ends_a_receiver_with_what_it_read() {
    let (a, b) = pair();
    let origin = Origin::unset();
    (&a).write_all_bytes(&[1u8; 1000]);
    let shared = Shared { origin: &origin, moved: None, turn: None };
    let mut reads = 0;
    let outcome = receive(&b, &receive_plan(), shared, |_| {
        reads += 1;
        true
    });
    assert!(matches!(outcome.ending, Ending::Stopped), "{:?}", outcome.ending);
    assert_eq!(outcome.record.bytes, 1000);
    assert_eq!(reads, 1);
}

#[test]
fn a_silent_peer_stalls_a_receiver_after_its_stall_time() {
    let (_a, b) = pair();
    let origin = Origin::unset();
    let plan = ReceivePlan { stall: Some(Duration::from_millis(300)), ..receive_plan() };
    let outcome = receive(&b, &plan, Shared { origin: &origin, moved: None, turn: None }, |_| false);
    assert!(matches!(outcome.ending, Ending::Stalled(_)), "{:?}", outcome.ending);
    assert_eq!(outcome.record.bytes, 0);
}

#[test]
fn a_sender_without_its_turn_writes_nothing_and_a_drained_turn_has_nothing_queued() {
    let (a, b) = pair();
    let origin = Origin::at(Instant::now());
    let turn = Turn::new(false);
    let outcome = std::thread::scope(|scope| {
        let sender = scope.spawn(|| {
            let shared = Shared { origin: &origin, moved: None, turn: Some(&turn) };
            send(&a, &send_plan(Duration::from_millis(600)), shared, |_| false)
        });
        // While the turn is not given, nothing arrives.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(crate::tcp_info::unread_bytes(&b), Some(0), "a sender wrote without its turn");
        turn.give();
        let reader = scope.spawn(|| {
            let shared = Shared { origin: &origin, moved: None, turn: None };
            receive(&b, &receive_plan(), shared, |_| false)
        });
        std::thread::sleep(Duration::from_millis(100));
        turn.take();
        let turnaround = turn.wait_drained(&[&a], Instant::now() + Duration::from_secs(5));
        assert!(turnaround.is_some(), "the reader empties the socket, so the turn drains");
        assert_eq!(crate::tcp_info::queued_bytes(&a), Some(0));
        // Drained and taken: nothing more is written until the turn is given again.
        let before = crate::tcp_info::queued_bytes(&a);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(crate::tcp_info::queued_bytes(&a), before);
        let sent = sender.join().unwrap();
        end::finish_sending(&a, &sent.record, Duration::from_secs(5));
        let _ = a.shutdown(std::net::Shutdown::Both);
        (sent, reader.join().unwrap())
    });
    let (sent, received) = outcome;
    assert!(sent.record.bytes > 0);
    assert_eq!(received.record.bytes, sent.record.bytes);
}

/// Writing a whole buffer to a socket in a test.
trait WriteAll {
    fn write_all_bytes(self, bytes: &[u8]);
}

impl WriteAll for &Socket {
    fn write_all_bytes(mut self, bytes: &[u8]) {
        std::io::Write::write_all(&mut self, bytes).unwrap();
    }
}

#[test]
fn an_instant_far_in_the_future_does_not_panic() {
    let now = Instant::now();
    assert_eq!(later(now, Duration::from_secs(1)), now + Duration::from_secs(1));
    assert!(later(now, Duration::MAX) > now + Duration::from_secs(3600 * 24 * 365));
}
