//! `Limits`: what a responder is willing to serve, and the check of a request against it.

use linkperf_core::Proto;

use crate::TestRequest;

/// A responder's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Most control sessions served at once.
    pub max_sessions: u32,
    /// Longest test, in seconds; the responder ends a test's data traffic after this.
    pub max_duration_s: f64,
    /// Largest message, in bytes.
    pub max_message_bytes: u64,
    /// Most data connections (or UDP sockets) opened over one test.
    pub max_streams_per_test: u32,
    /// Highest UDP rate of one test, all streams together, in bits per second (`None`: no limit).
    pub max_udp_rate_bps: Option<f64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_sessions: 64,
            max_duration_s: 3600.0,
            max_message_bytes: 16 << 20,
            max_streams_per_test: 1024,
            max_udp_rate_bps: None,
        }
    }
}

/// The largest UDP payload over IPv4 (65535 - 20 IP - 8 UDP).
pub const MAX_UDP_PAYLOAD_IPV4: u64 = 65_507;
/// The largest UDP payload over IPv6 without jumbograms (65535 - 8 UDP).
pub const MAX_UDP_PAYLOAD_IPV6: u64 = 65_527;

impl Limits {
    /// Checks a request; the error text is sent to the client as is.
    pub fn check(&self, request: &TestRequest) -> Result<(), String> {
        let planned = match request {
            TestRequest::Latency { planned_duration_s, .. } | TestRequest::Connect { planned_duration_s, .. } => {
                *planned_duration_s
            }
            TestRequest::Throughput { duration_s, .. } => Some(*duration_s),
        };
        if let Some(planned) = planned.filter(|&p| p > self.max_duration_s) {
            return Err(format!(
                "the test would run {planned:.0} s, this responder allows at most {:.0} s (serve --max-duration)",
                self.max_duration_s
            ));
        }
        match request {
            TestRequest::Latency { proto, max_message_bytes, connections, .. } => {
                self.check_latency(*proto, *max_message_bytes, *connections)
            }
            TestRequest::Connect { proto, .. } if !proto.is_connection_oriented() => {
                Err(format!("connect needs a connection-oriented transport, not {}", proto.name()))
            }
            TestRequest::Connect { .. } => Ok(()),
            TestRequest::Throughput { proto: Proto::Udp, write_bytes, .. }
                if (*write_bytes as usize) < crate::STREAM_PROBE_BYTES =>
            {
                Err(format!(
                    "UDP throughput datagrams carry a {}-byte header: use --size {0} or more",
                    crate::STREAM_PROBE_BYTES
                ))
            }
            TestRequest::Throughput { duration_s, interval_s, rate_bps, .. }
                if !(positive(*duration_s) && positive(*interval_s) && rate_bps.is_none_or(positive)) =>
            {
                Err("durations, intervals and rates must be finite and above zero".into())
            }
            TestRequest::Throughput { proto: Proto::Udp, rate_bps, connections, .. }
                if self.udp_rate_refused(*rate_bps, *connections) =>
            {
                let limit = self.max_udp_rate_bps.unwrap_or(0.0) / 1e6;
                Err(match rate_bps {
                    Some(rate) => format!(
                        "{:.1} Mbit/s of UDP exceeds this responder's limit of {limit:.1} Mbit/s (serve --max-rate)",
                        rate * f64::from(*connections) / 1e6
                    ),
                    None => format!("this responder serves UDP at most at {limit:.1} Mbit/s: pass --rate"),
                })
            }
            TestRequest::Throughput { proto, connections, write_bytes, .. } => {
                self.check_latency(*proto, *write_bytes, *connections)
            }
        }
    }

    /// Whether a UDP test at `rate_bps` per stream on `connections` streams exceeds the rate limit.
    fn udp_rate_refused(&self, rate_bps: Option<f64>, connections: u32) -> bool {
        match (self.max_udp_rate_bps, rate_bps) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(limit), Some(rate)) => rate * f64::from(connections) > limit,
        }
    }

    fn check_latency(&self, proto: Proto, size: u64, connections: u32) -> Result<(), String> {
        if size > self.max_message_bytes {
            return Err(format!(
                "messages of {size} bytes exceed this responder's limit of {} bytes",
                self.max_message_bytes
            ));
        }
        if proto == Proto::Udp && size > MAX_UDP_PAYLOAD_IPV6 {
            return Err(format!("a UDP datagram carries at most {MAX_UDP_PAYLOAD_IPV6} bytes, not {size}"));
        }
        if connections == 0 || connections > self.max_streams_per_test {
            return Err(format!(
                "{connections} connections requested (sessions x sizes), this responder allows 1 to {}",
                self.max_streams_per_test
            ));
        }
        Ok(())
    }
}

/// Whether a number from a peer is usable as a duration or rate.
fn positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::WaitMode;

    fn latency(proto: Proto, size: u64, connections: u32, planned: Option<f64>) -> TestRequest {
        TestRequest::Latency {
            proto,
            max_message_bytes: size,
            connections,
            wait: WaitMode::Block,
            planned_duration_s: planned,
        }
    }

    #[test]
    fn requests_within_limits_pass() {
        assert_eq!(Limits::default().check(&latency(Proto::Tcp, 65536, 16, Some(10.0))), Ok(()));
    }

    #[test]
    fn requests_over_limits_are_refused_with_the_limit() {
        let limits = Limits { max_duration_s: 5.0, max_message_bytes: 1000, ..Limits::default() };
        let too_long = limits.check(&latency(Proto::Tcp, 64, 1, Some(60.0))).unwrap_err();
        assert!(too_long.contains("at most 5 s"), "{too_long}");
        assert!(limits.check(&latency(Proto::Tcp, 1001, 1, None)).unwrap_err().contains("1000 bytes"));
        assert!(limits.check(&latency(Proto::Tcp, 64, 0, None)).is_err());
        assert!(limits.check(&latency(Proto::Tcp, 64, 5000, None)).is_err());
    }

    #[test]
    fn udp_messages_must_fit_a_datagram() {
        assert!(Limits::default().check(&latency(Proto::Udp, 65_528, 1, None)).is_err());
    }

    fn throughput(proto: Proto, duration_s: f64, rate_bps: Option<f64>, connections: u32) -> TestRequest {
        TestRequest::Throughput {
            proto,
            connections,
            write_bytes: 1472,
            duration_s,
            interval_s: 1.0,
            buffer_bytes: None,
            congestion: None,
            discard: false,
            rate_bps,
            gso: true,
            batch: 1,
            alternating: false,
            datagrams: None,
        }
    }

    #[test]
    fn impossible_throughput_numbers_are_refused() {
        let request = |duration_s, rate_bps| throughput(Proto::Tcp, duration_s, rate_bps, 1);
        assert_eq!(Limits::default().check(&request(10.0, Some(1e6))), Ok(()));
        for (duration, rate) in
            [(f64::NAN, None), (0.0, None), (-1.0, None), (10.0, Some(f64::INFINITY)), (10.0, Some(0.0))]
        {
            assert!(Limits::default().check(&request(duration, rate)).is_err(), "{duration} {rate:?}");
        }
    }

    #[test]
    fn udp_rates_above_the_limit_are_refused() {
        let limits = Limits { max_udp_rate_bps: Some(100e6), ..Limits::default() };
        let request = |rate_bps, connections| throughput(Proto::Udp, 1.0, rate_bps, connections);
        assert_eq!(limits.check(&request(Some(50e6), 2)), Ok(()));
        assert!(limits.check(&request(Some(60e6), 2)).unwrap_err().contains("120.0 Mbit/s of UDP exceeds"));
        assert!(limits.check(&request(None, 1)).unwrap_err().contains("pass --rate"));
    }

    #[test]
    fn connect_needs_connections() {
        let request = TestRequest::Connect { proto: Proto::Udp, planned_duration_s: None };
        assert!(Limits::default().check(&request).is_err());
    }
}
