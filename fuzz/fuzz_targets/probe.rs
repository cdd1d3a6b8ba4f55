//! UDP datagrams reaching the responder's shared port or a stream socket: the latency probe header, the
//! throughput stream header, a REGISTER datagram, and the receiver's loss and reorder tracking fed with the
//! sequence numbers and send times they carry. The input is a run of datagrams, 20 bytes each.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_core::datagram_tracker::DatagramTracker;
use linkperf_net::udp_stream::registration;
use linkperf_proto::{ProbeHeader, StreamProbe};

fuzz_target!(|data: &[u8]| {
    let mut tracker = DatagramTracker::new();
    for (k, datagram) in data.chunks(20).enumerate() {
        let _ = ProbeHeader::read_from(datagram);
        let _ = registration(datagram);
        if let Some(probe) = StreamProbe::read_from(datagram).filter(StreamProbe::is_data) {
            tracker.record(probe.sequence, probe.sent_ns, k as u64 * 1_000);
        }
    }
    let _ = tracker.stats();
});
