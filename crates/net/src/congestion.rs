//! Whether this host can use a TCP congestion control, asked before a test starts: a socket option that
//! the kernel refuses part-way would otherwise leave the test running with the system's default.
//!
//! The kernel is asked directly, by setting the option on a socket that never connects, so a module it
//! may load on demand (as root) counts as available; the list in /proc only names the choices when it
//! refuses.

use crate::NetError;

/// Where Linux lists the congestion controls loaded now.
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Checks that TCP sockets here can use congestion control `name`; the error names the available ones.
pub fn check_congestion(name: &str) -> Result<(), NetError> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, Some(socket2::Protocol::TCP))
        .map_err(|e| NetError::io("could not open a TCP socket to check --congestion", e))?;
    match socket.set_tcp_congestion(name.as_bytes()) {
        Ok(()) => Ok(()),
        Err(error) => Err(NetError::Invalid(format!(
            "TCP congestion control '{}' cannot be used on this host ({error}); available: {}",
            name.escape_debug(),
            available().unwrap_or_else(|| format!("unknown ({AVAILABLE} cannot be read)"))
        ))),
    }
}

/// The congestion controls the kernel has loaded, as it lists them.
fn available() -> Option<String> {
    let text = std::fs::read_to_string(AVAILABLE).ok()?;
    Some(text.split_whitespace().collect::<Vec<_>>().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_congestion_control_is_accepted_and_a_made_up_one_names_the_choices() {
        let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
        assert!(check_congestion(default.trim()).is_ok());
        let refused = check_congestion("nonexistent").unwrap_err().to_string();
        assert!(refused.contains("'nonexistent' cannot be used") && refused.contains(default.trim()), "{refused}");
    }
}
