//! The responder's bounds, end to end on loopback: floods of unauthenticated connections, slots taken only
//! after authentication, traffic only to the control session's address, and the buffer-memory budget.
//! The rules themselves are unit-tested in `linkperf_proto::session` and the responder's modules; these
//! tests check that the driver applies them to real sockets.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use linkperf_core::{Proto, WaitMode};
use linkperf_net::control::ControlClient;
use linkperf_net::{Budgets, NetError, Responder, ResponderConfig, ResponderHandle, Target};
use linkperf_proto::{Preamble, ProbeHeader, Role, StreamProbe, TestRequest, MESSAGE_SIZE_BYTES};

const TIMEOUT: Duration = Duration::from_secs(5);

fn start(config: ResponderConfig) -> ResponderHandle {
    let config = ResponderConfig { bind: "127.0.0.1:0".parse().unwrap(), ..config };
    Responder::bind(config).unwrap().spawn().unwrap()
}

fn session(responder: &ResponderHandle, key: Option<&[u8]>) -> Result<ControlClient, NetError> {
    ControlClient::connect(&Target::inet(responder.address()), key, TIMEOUT)
}

fn latency(proto: Proto, bytes: u64, connections: u32) -> TestRequest {
    TestRequest::Latency {
        proto,
        max_message_bytes: bytes,
        connections,
        wait: WaitMode::Block,
        planned_duration_s: Some(30.0),
    }
}

/// A data connection of `token` that has sent its preamble and a message size of `bytes`.
fn data_connection(address: SocketAddr, token: u32, bytes: u32) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(&Preamble::new(Role::Data, token).encode()).unwrap();
    stream.write_all(&bytes.to_be_bytes()[..MESSAGE_SIZE_BYTES]).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

/// Whether one message of `bytes` comes back whole.
fn echoes(stream: &mut TcpStream, bytes: usize) -> bool {
    let message = vec![7u8; bytes];
    let mut back = vec![0u8; bytes];
    stream.write_all(&message).is_ok() && stream.read_exact(&mut back).is_ok() && back == message
}

/// Whether the responder closed the connection (end of stream or reset) within the timeout.
fn closed_by_responder(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        Ok(_) => false,
    }
}

#[test]
fn a_flood_of_silent_connections_does_not_keep_a_client_out() {
    let responder =
        start(ResponderConfig { unauthenticated: 32, unauthenticated_per_address: 8, ..Default::default() });
    let mut silent: Vec<TcpStream> = (0..100).map(|_| TcpStream::connect(responder.address()).unwrap()).collect();
    let mut client = session(&responder, None).unwrap();
    let token = client.request(latency(Proto::Tcp, 64, 1)).unwrap();
    let mut data = data_connection(responder.address(), token, 64);
    assert!(echoes(&mut data, 64));
    // The oldest silent connections made room: the responder closed them.
    silent[0].set_read_timeout(Some(TIMEOUT)).unwrap();
    assert!(closed_by_responder(&mut silent[0]));
}

#[test]
fn a_session_slot_is_taken_only_after_authentication() {
    let key = b"a key of the test".to_vec();
    let limits = linkperf_proto::Limits { max_sessions: 1, ..Default::default() };
    let responder = start(ResponderConfig { key: Some(key.clone()), limits, ..Default::default() });
    // Five peers greet and never prove the key: they hold no slot.
    let hello = {
        let mut bytes = Preamble::new(Role::Control, 0).encode().to_vec();
        bytes.extend(linkperf_proto::frame::encode_frame(&linkperf_proto::Message::Hello {
            software: "not linkperf".into(),
            host: linkperf_core::HostFacts::default(),
            nonce: "00112233445566778899aabbccddeeff".into(),
        }));
        bytes
    };
    let _greeters: Vec<TcpStream> = (0..5)
        .map(|_| {
            let mut stream = TcpStream::connect(responder.address()).unwrap();
            stream.write_all(&hello).unwrap();
            stream
        })
        .collect();
    let mut first = session(&responder, Some(&key)).unwrap();
    assert!(!first.responder().hostname.is_empty(), "host facts come with the proof");
    // A session with a test open is never evicted for a newcomer.
    first.request(latency(Proto::Tcp, 64, 1)).unwrap();
    let second = session(&responder, Some(&key));
    assert!(matches!(&second, Err(NetError::Refused { message, .. }) if message.contains("at most 1 sessions")));
    drop(first);
    let deadline = Instant::now() + TIMEOUT;
    while session(&responder, Some(&key)).is_err() {
        assert!(Instant::now() < deadline, "the slot is given back when its session ends");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_full_responder_makes_room_by_closing_the_session_idle_the_longest() {
    let limits = linkperf_proto::Limits { max_sessions: 2, ..Default::default() };
    let responder = start(ResponderConfig { limits, ..Default::default() });
    let mut idle = session(&responder, None).unwrap();
    let mut busy = session(&responder, None).unwrap();
    busy.request(latency(Proto::Tcp, 64, 1)).unwrap();
    // Sessions idle for less than a second keep their slot; poll until the idle one has been idle longer.
    let deadline = Instant::now() + TIMEOUT;
    let _newcomer = loop {
        match session(&responder, None) {
            Ok(newcomer) => break newcomer,
            Err(e) => assert!(Instant::now() < deadline, "no room was made: {e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let evicted = idle.request(latency(Proto::Tcp, 64, 1));
    assert!(
        matches!(&evicted, Err(NetError::Refused { message, .. }) if message.contains("idle the longest")),
        "{:?}",
        evicted.err()
    );
    assert!(busy.request(latency(Proto::Tcp, 64, 1)).is_ok(), "the session with a test open kept its slot");
}

#[test]
fn udp_traffic_goes_only_to_the_control_sessions_address() {
    let responder = start(ResponderConfig::default());
    let mut client = session(&responder, None).unwrap();
    let third = UdpSocket::bind("127.0.0.2:0").unwrap();
    let owner = UdpSocket::bind("127.0.0.1:0").unwrap();
    for socket in [&third, &owner] {
        socket.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    }
    let reply = |socket: &UdpSocket, datagram: &[u8]| {
        socket.send_to(datagram, responder.address()).unwrap();
        let mut buffer = [0u8; 2048];
        socket.recv(&mut buffer).ok().map(|n| buffer[..n].to_vec())
    };

    // Echo: a valid token from a third address gets nothing, the session's own address its echo.
    let token = client.request(latency(Proto::Udp, 64, 1)).unwrap();
    let mut datagram = [0u8; 64];
    ProbeHeader { token, sequence: 1 }.write_to(&mut datagram);
    assert_eq!(reply(&third, &datagram), None);
    assert_eq!(reply(&owner, &datagram).as_deref(), Some(&datagram[..]));

    // A download stream's registration from a third address is not set up (no ACK, no data).
    let download = TestRequest::Throughput {
        proto: Proto::Udp,
        connections: 1,
        write_bytes: 1000,
        duration_s: 1.0,
        interval_s: 0.5,
        buffer_bytes: None,
        congestion: None,
        discard: false,
        rate_bps: Some(1e6),
        gso: false,
        batch: 1,
        alternating: false,
        datagrams: None,
    };
    let token = client.request(download).unwrap();
    let mut registration = [0u8; 64];
    StreamProbe { token, sequence: StreamProbe::REGISTER, sent_ns: 0 }.write_to(&mut registration);
    let header = linkperf_proto::StreamHeader { flow: linkperf_core::throughput::Flow::Download, index: 0 };
    let at = linkperf_proto::STREAM_PROBE_BYTES;
    registration[at..at + MESSAGE_SIZE_BYTES].copy_from_slice(&header.encode());
    for _ in 0..3 {
        assert_eq!(reply(&third, &registration[..at + MESSAGE_SIZE_BYTES]), None);
    }
}

#[test]
fn data_connections_beyond_the_memory_budget_are_refused_until_memory_is_released() {
    let budgets =
        Budgets { data_paths: 100, buffer_bytes: 3 << 20, session_data_paths: 100, session_buffer_bytes: 3 << 20 };
    let responder = start(ResponderConfig { budgets, ..Default::default() });
    let mut client = session(&responder, None).unwrap();
    let megabyte = 1 << 20;
    let token = client.request(latency(Proto::Tcp, megabyte, 8)).unwrap();
    let mut held: Vec<TcpStream> =
        (0..3).map(|_| data_connection(responder.address(), token, megabyte as u32)).collect();
    for stream in &mut held {
        assert!(echoes(stream, megabyte as usize));
    }
    let mut fourth = data_connection(responder.address(), token, megabyte as u32);
    assert!(closed_by_responder(&mut fourth), "3 MiB are held by three connections of 1 MiB");
    client.done(token).unwrap();
    let token = client.request(latency(Proto::Tcp, megabyte, 1)).unwrap();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut again = data_connection(responder.address(), token, megabyte as u32);
        if echoes(&mut again, megabyte as usize) {
            break;
        }
        assert!(Instant::now() < deadline, "the released test's memory is given back");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_test_request_with_an_absurd_interval_is_refused_with_its_reason() {
    let responder = start(ResponderConfig::default());
    let mut client = session(&responder, None).unwrap();
    let request = TestRequest::Throughput {
        proto: Proto::Tcp,
        connections: 1,
        write_bytes: 1000,
        duration_s: 5.0,
        interval_s: 1e-9,
        buffer_bytes: None,
        congestion: None,
        discard: false,
        rate_bps: None,
        gso: false,
        batch: 1,
        alternating: false,
        datagrams: None,
    };
    let refused = client.request(request);
    assert!(
        matches!(&refused, Err(NetError::Refused { message, .. }) if message.contains("too short")),
        "{:?}",
        refused.err()
    );
    // The session goes on.
    assert!(client.request(latency(Proto::Tcp, 64, 1)).is_ok());
}
