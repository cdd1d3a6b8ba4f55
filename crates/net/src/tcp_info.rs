//! Reads a TCP socket's state (`TCP_INFO`, `TCP_CONGESTION`) for throughput reports.
//!
//! The one place in linkperf that calls `getsockopt` directly, because no maintained crate exposes
//! `TCP_INFO`; the unsafe block is small and its invariants are stated.

use std::os::fd::AsRawFd;

use linkperf_core::throughput::TcpStats;
use socket2::Socket;

/// The socket's TCP state, or `None` if it is not a TCP socket (a Unix socket) or the kernel refuses.
pub fn tcp_stats(socket: &Socket) -> Option<TcpStats> {
    let info = tcp_info(socket)?;
    let congestion = socket
        .tcp_congestion()
        .ok()
        .map(|name| String::from_utf8_lossy(&name).trim_end_matches('\0').to_string())
        .unwrap_or_default();
    Some(TcpStats {
        retransmits: u64::from(info.tcpi_total_retrans),
        cwnd_bytes: u64::from(info.tcpi_snd_cwnd) * u64::from(info.tcpi_snd_mss),
        srtt_us: u64::from(info.tcpi_rtt),
        mss_bytes: u64::from(info.tcpi_snd_mss),
        congestion,
    })
}

/// Bytes of the socket's data the peer has acknowledged (`tcpi_bytes_acked`); `None` for non-TCP sockets.
pub fn bytes_acked(socket: &Socket) -> Option<u64> {
    tcp_info(socket).map(|info| info.tcpi_bytes_acked)
}

#[allow(unsafe_code)]
fn tcp_info(socket: &Socket) -> Option<libc::tcp_info> {
    // SAFETY: `tcp_info` is a plain C struct for which all-zero bytes are a valid value; getsockopt writes at
    // most `length` bytes into it and reports how many it wrote, and the file descriptor is open for the
    // duration of the call because `socket` is borrowed.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut length = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let result = libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut length,
        );
        (result == 0).then_some(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connected_tcp_socket_reports_its_state() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let stats = tcp_stats(&Socket::from(client)).expect("TCP_INFO on a TCP socket");
        assert!(stats.mss_bytes > 0);
        assert!(stats.cwnd_bytes > 0);
        assert!(!stats.congestion.is_empty());
    }

    #[test]
    fn a_unix_socket_has_no_tcp_state() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(tcp_stats(&Socket::from(a)), None);
    }
}
