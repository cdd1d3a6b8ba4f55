//! What to tell a user whose echo test went wrong. Against an echo there is no `linkperf serve` to start:
//! what can be wrong is that nothing listens (no echo service on that port), that nothing sends the bytes
//! back (no loopback plug, no echo at the far end of the line), or that the bytes come back changed (the
//! two ends' settings differ). The hint names the one the outcome points to.

use linkperf_core::echo_setup::EchoPeer;
use linkperf_net::echo_peer::CHANGED_WARNING;
use linkperf_net::NetError;

/// A failure to reach an echo, with what to check (printed as the error's hint by `exit`).
#[derive(Debug, thiserror::Error)]
pub enum EchoProblem {
    /// Nothing accepted the connection: no echo service at that address and port.
    #[error("{0}")]
    NoService(String),
}

impl EchoProblem {
    /// What to check.
    pub fn hint(&self) -> &'static str {
        match self {
            EchoProblem::NoService(_) => NO_SERVICE,
        }
    }
}

const NO_SERVICE: &str = "no echo service listens there: check the address and --port (RFC 862 echo is port 7; a \
device server's TCP-server port is in its settings), and that the service is enabled on the device";
const NOTHING_BACK_SERIAL: &str = "nothing came back over the serial line: is the loopback plug on (TX joined to \
RX), or `linkperf serve --serial` running at the far end with the same settings? With --flow rtscts a plug must \
also join RTS to CTS";
const NOTHING_BACK_SERVICE: &str = "the echo service took the bytes but sent nothing back: is a loopback plug on \
the device server's serial port, is the port in TCP-server (raw) mode, and does the service echo at all?";
const NOTHING_BACK_UDP: &str = "no datagram came back: is a UDP echo service listening there, and does the \
device server forward UDP to its serial port and back?";
const SETTINGS: &str = "bytes came back changed: the two ends' settings differ (--baud, --data-bits, --parity, \
--stop-bits must match the device's or the far end's), or the line is noisy";

/// The hint a finished echo run's outcome points to, if any: `intact` is what came back unchanged (round
/// trips or bytes), `warnings` the run's.
pub fn after_run(
    peer: EchoPeer,
    udp: bool,
    error: Option<&NetError>,
    intact: u64,
    warnings: &[String],
) -> Option<&'static str> {
    let changed = warnings.iter().any(|w| w.contains(CHANGED_WARNING));
    match error {
        Some(NetError::Interrupted) => None,
        _ if changed => Some(SETTINGS),
        Some(NetError::Io { source, .. }) if source.kind() == std::io::ErrorKind::ConnectionRefused => Some(NO_SERVICE),
        Some(_) | None if intact == 0 => Some(match (peer, udp) {
            (EchoPeer::SerialDevice, _) => NOTHING_BACK_SERIAL,
            (EchoPeer::EchoService, true) => NOTHING_BACK_UDP,
            (EchoPeer::EchoService, false) => NOTHING_BACK_SERVICE,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_what_the_outcome_points_to() {
        let stall = NetError::Timeout { what: "the first message".into(), timeout_s: 2.0 };
        assert_eq!(after_run(EchoPeer::SerialDevice, false, Some(&stall), 0, &[]), Some(NOTHING_BACK_SERIAL));
        assert_eq!(after_run(EchoPeer::EchoService, false, Some(&stall), 0, &[]), Some(NOTHING_BACK_SERVICE));
        assert_eq!(after_run(EchoPeer::EchoService, true, None, 0, &[]), Some(NOTHING_BACK_UDP));
        let changed = vec![format!("/dev/ttyS0: 3 of the 1 B messages {CHANGED_WARNING}")];
        assert_eq!(after_run(EchoPeer::SerialDevice, false, None, 0, &changed), Some(SETTINGS));
        assert_eq!(after_run(EchoPeer::SerialDevice, false, None, 100, &[]), None);
        assert_eq!(after_run(EchoPeer::SerialDevice, false, Some(&NetError::Interrupted), 0, &[]), None);
        assert!(!NO_SERVICE.contains("linkperf serve"), "an echo has no linkperf responder to start");
    }
}
