//! Reads a stream socket's state for throughput reports and for the end of a stream: `TCP_INFO`,
//! `TCP_CONGESTION`, the bytes still queued for sending (`SIOCOUTQ`), and sets `TCP_NOTSENT_LOWAT`.
//!
//! The one place in linkperf that calls `getsockopt`, `setsockopt` and `ioctl` directly, because no
//! maintained crate exposes these; each unsafe block is small and its invariants are stated.

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
        max_srtt_us: None,
    })
}

/// Bytes of the socket's data the peer has acknowledged (`tcpi_bytes_acked`); `None` for non-TCP sockets.
pub fn bytes_acked(socket: &Socket) -> Option<u64> {
    tcp_info(socket).map(|info| info.tcpi_bytes_acked)
}

/// What a TCP sender's state says about the data still on its way: the smoothed round-trip time and the
/// rate at which the peer acknowledged data over the connection so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delivery {
    /// Smoothed round-trip time (`tcpi_rtt`).
    pub srtt: std::time::Duration,
    /// Payload bytes the peer has acknowledged: `tcpi_bytes_acked`, less the FIN once it is acknowledged
    /// (the FIN takes a sequence number, and the kernel counts it as a byte).
    pub acked_bytes: u64,
}

/// The sender's delivery state; `None` for non-TCP sockets.
pub fn delivery(socket: &Socket) -> Option<Delivery> {
    tcp_info(socket).map(|info| {
        // The states in which this end's FIN has been acknowledged (include/net/tcp_states.h).
        const FIN_WAIT2: u8 = 5;
        const TIME_WAIT: u8 = 6;
        const CLOSE: u8 = 7;
        let fin = u64::from(matches!(info.tcpi_state, FIN_WAIT2 | TIME_WAIT | CLOSE));
        Delivery {
            srtt: std::time::Duration::from_micros(u64::from(info.tcpi_rtt)),
            acked_bytes: info.tcpi_bytes_acked.saturating_sub(fin),
        }
    })
}

/// Bytes written to a stream socket that have not yet reached the peer: for TCP, written but not yet
/// acknowledged (unsent and in flight, `SIOCOUTQ`); for a Unix socket, not yet read by the peer (counted
/// with the kernel's buffer overhead, so only zero is exact). `None` if the kernel refuses.
#[allow(unsafe_code)]
pub fn queued_bytes(socket: &Socket) -> Option<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one `int` through the pointer, which points at a live local; the
    // descriptor is open for the duration of the call because `socket` is borrowed.
    let result = unsafe { libc::ioctl(socket.as_raw_fd(), libc::TIOCOUTQ, &mut queued as *mut libc::c_int) };
    (result == 0).then(|| u64::try_from(queued).unwrap_or(0))
}

/// Bytes that have arrived on a stream socket and wait to be read (`FIONREAD`); `None` if the kernel
/// refuses.
#[allow(unsafe_code)]
pub fn unread_bytes(socket: &Socket) -> Option<u64> {
    let mut unread: libc::c_int = 0;
    // SAFETY: FIONREAD writes one `int` through the pointer, which points at a live local; the descriptor
    // is open for the duration of the call because `socket` is borrowed.
    let result = unsafe { libc::ioctl(socket.as_raw_fd(), libc::FIONREAD, &mut unread as *mut libc::c_int) };
    (result == 0).then(|| u64::try_from(unread).unwrap_or(0))
}

/// Asks TCP to accept writes only while fewer than `bytes` written bytes are still unsent
/// (`TCP_NOTSENT_LOWAT`), so that what waits in the send buffer stays small. Ignored for non-TCP sockets.
#[allow(unsafe_code)]
pub fn set_notsent_lowat(socket: &Socket, bytes: u32) {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt reads `length` bytes from a pointer to a live local `int`; the descriptor is open
    // for the duration of the call because `socket` is borrowed.
    let _ = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
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

    #[test]
    fn queued_bytes_count_what_the_peer_has_not_yet_taken() {
        use std::io::{Read, Write};
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let a = Socket::from(a);
        assert_eq!(queued_bytes(&a), Some(0));
        (&a).write_all(&[7u8; 1000]).unwrap();
        assert!(queued_bytes(&a).unwrap() >= 1000, "{:?}", queued_bytes(&a));
        b.read_exact(&mut [0u8; 1000]).unwrap();
        assert_eq!(queued_bytes(&a), Some(0));
    }

    #[test]
    fn tcp_queued_bytes_fall_to_zero_once_acknowledged() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = Socket::from(std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap());
        let (_server, _) = listener.accept().unwrap();
        (&client).write_all(&[7u8; 10_000]).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while queued_bytes(&client) != Some(0) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(queued_bytes(&client), Some(0), "loopback acknowledges at once");
        assert!(delivery(&client).unwrap().acked_bytes >= 10_000);
    }
}
