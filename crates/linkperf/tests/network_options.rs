//! The client's socket options on the wire, between two namespaced test hosts: `--bind` sends every socket
//! (control, TCP and UDP data) from the address asked, and `--dscp` marks every packet the client sends.
//! What arrived is read at the responder's interface by a packet socket (tests/common/sniff.py).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::netns::{ip, TestNet, RESPONDER_ADDRESS};
use common::Server;

const SNIFFER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/sniff.py");
/// A second address of the client host, outside the link's /30: only `--bind` sends from it.
const SECOND_ADDRESS: &str = "198.18.0.5";

#[test]
fn bound_and_marked_sockets_show_on_the_wire() {
    let Some(net) = TestNet::create() else { return };
    assert!(ip(&["-n", &net.client, "addr", "add", &format!("{SECOND_ADDRESS}/32"), "dev", &net.client_dev]));
    assert!(ip(&["-n", &net.responder, "route", "add", &format!("{SECOND_ADDRESS}/32"), "dev", &net.responder_dev]));
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let port = server.port_arg();
    let mut sniffer = Command::new("ip")
        .args(["netns", "exec", &net.responder, "python3", SNIFFER, &net.responder_dev, "30"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the sniffer");
    let mut lines = BufReader::new(sniffer.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    let options = ["--bind", SECOND_ADDRESS, "--dscp", "ef", "--no-store"];
    for test in [
        &["latency", RESPONDER_ADDRESS, "-p", &port, "--proto", "udp", "-n", "50"][..],
        &["throughput", RESPONDER_ADDRESS, "-p", &port, "--duration", "1s"][..],
        &["throughput", RESPONDER_ADDRESS, "-p", &port, "--proto", "udp", "--rate", "1M", "--duration", "1s"][..],
    ] {
        let output = net.client_command(&[test, &options[..]].concat()).output().unwrap();
        assert!(output.status.success(), "{test:?}: {}", String::from_utf8_lossy(&output.stderr));
        let table = String::from_utf8_lossy(&output.stdout);
        assert!(table.contains("sockets:   from 198.18.0.5:0, TOS 0xb8 (DSCP 46, EF, ECN 0)"), "{table}");
    }
    let _ = sniffer.kill();
    let packets: Vec<(String, u8, u8)> = lines
        .map_while(Result::ok)
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.parse().ok()?, words.next()?.parse().ok()?))
        })
        .collect();
    let _ = sniffer.wait();
    let (tcp, udp) = (6, 17);
    let from_client: Vec<&(String, u8, u8)> = packets.iter().filter(|p| p.2 == tcp || p.2 == udp).collect();
    assert!(from_client.iter().any(|p| p.2 == udp) && from_client.iter().any(|p| p.2 == tcp), "{packets:?}");
    // Every TCP and UDP packet that reached the responder came from the bound address, marked EF (46 << 2).
    for packet in &from_client {
        assert_eq!((packet.0.as_str(), packet.1), (SECOND_ADDRESS, 0xb8), "{packet:?} of {}", from_client.len());
    }
}
