//! `SerialPort`: a tty device set to a line's settings with termios, as an [`EchoLink`] closed by a loopback
//! plug (or any device that echoes).
//!
//! Opening takes the port for this process alone: an advisory `flock` (held by any other linkperf, and by
//! programs that lock ports the same way) and `TIOCEXCL` (refuses further opens by unprivileged programs).
//! The settings are applied in raw mode, read back, and every one that the device did not take is an
//! error, so that no figure is computed for a rate the line is not running at. The previous settings are
//! restored when the port is dropped, which the binary makes happen on Ctrl-C too (it stops the run, then
//! returns normally); a second Ctrl-C, which quits at once, calls [`restore_all`] first.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use linkperf_core::serial_line::{FlowControl, LineSettings, Parity};
use nix::fcntl::{Flock, FlockArg};
use nix::sys::termios::{self, BaudRate, ControlFlags, InputFlags, SetArg, SpecialCharacterIndices, Termios};

use super::echo_link::EchoLink;

/// Why a serial port could not be used as asked.
#[derive(Debug, thiserror::Error)]
pub enum SerialError {
    /// The device could not be opened.
    #[error("could not open serial device {path}: {source}")]
    Open {
        /// The device.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another process holds the port.
    #[error("serial device {0} is in use by another process (it holds a lock on it): close that program first")]
    Busy(PathBuf),
    /// The path is not a terminal device.
    #[error("{path} is not a serial device (a tty): {source}")]
    NotATty {
        /// The path.
        path: PathBuf,
        /// Why.
        source: nix::Error,
    },
    /// termios has no constant for this rate.
    #[error("unsupported baud rate {0}: use a standard rate (e.g. 9600, 19200, 38400, 57600, 115200, 230400)")]
    UnsupportedBaud(u32),
    /// The device did not take a setting.
    #[error("serial device {path} refused a setting: {what}")]
    Refused {
        /// The device.
        path: PathBuf,
        /// Which setting, asked vs read back.
        what: String,
    },
}

/// An open serial port, in this process's hands alone. Its handles (the port and those from
/// `try_clone`, e.g. the reading thread's of a throughput test) share one lock: the port is
/// unlocked and restored when the last of them drops.
pub struct SerialPort {
    file: File,
    path: PathBuf,
    /// Shared by every handle (a `Mutex` only to be `Sync`: nothing locks it but its drop).
    lock: std::sync::Arc<std::sync::Mutex<PortLock>>,
}

/// The lock on a port and the settings it had before: put back, and the lock released, on drop.
struct PortLock {
    file: Flock<File>,
    previous: Termios,
    /// Its entry in [`OPEN_PORTS`].
    id: u64,
}

/// Every open port's previous settings, on a handle of its own, so that [`restore_all`] can put them back
/// when the process must quit without unwinding (a second Ctrl-C).
static OPEN_PORTS: std::sync::Mutex<Vec<(u64, File, Termios)>> = std::sync::Mutex::new(Vec::new());
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Restores every open port to its previous settings at once. For a process about to exit without running
/// destructors; the ports stay open.
pub fn restore_all() {
    let ports = OPEN_PORTS.lock().unwrap_or_else(|e| e.into_inner());
    for (_, file, previous) in ports.iter() {
        let _ = termios::tcsetattr(file.as_fd(), SetArg::TCSANOW, previous);
    }
}

impl SerialPort {
    /// Opens `path` exclusively, applies `line` in raw mode, and checks that the device took every setting.
    pub fn open(path: &Path, line: &LineSettings) -> Result<Self, SerialError> {
        let baud = baud_rate(line.baud)?;
        let open_error = |source| SerialError::Open { path: path.to_path_buf(), source };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
            .open(path)
            .map_err(open_error)?;
        let file = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|_| SerialError::Busy(path.into()))?;
        let previous = termios::tcgetattr(file.as_fd())
            .map_err(|source| SerialError::NotATty { path: path.to_path_buf(), source })?;
        set_exclusive(&file, true);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(handle) = file.try_clone() {
            OPEN_PORTS.lock().unwrap_or_else(|e| e.into_inner()).push((id, handle, previous.clone()));
        }
        let handle = file.try_clone().map_err(open_error)?;
        // From here on, dropping the lock restores the port, whatever fails below.
        let lock = std::sync::Arc::new(std::sync::Mutex::new(PortLock { file, previous: previous.clone(), id }));
        let mut wanted = previous;
        configure(&mut wanted, baud, line);
        let refused = |what: String| SerialError::Refused { path: path.to_path_buf(), what };
        termios::tcsetattr(handle.as_fd(), SetArg::TCSANOW, &wanted).map_err(|e| refused(e.to_string()))?;
        let got = termios::tcgetattr(handle.as_fd()).map_err(|e| refused(e.to_string()))?;
        check(&wanted, &got, line).map_err(refused)?;
        // Bytes left over from before (a previous run's echo) would be taken for this run's.
        let _ = termios::tcflush(handle.as_fd(), termios::FlushArg::TCIOFLUSH);
        Ok(Self { file: handle, path: path.to_path_buf(), lock })
    }

    /// The device's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PortLock {
    fn drop(&mut self) {
        // Output still queued would be cut off by the old settings: let it drain first.
        let _ = termios::tcsetattr(self.file.as_fd(), SetArg::TCSADRAIN, &self.previous);
        OPEN_PORTS.lock().unwrap_or_else(|e| e.into_inner()).retain(|(id, _, _)| *id != self.id);
        set_exclusive(&self.file, false);
    }
}

/// Sets or clears the tty's exclusive mode (TIOCEXCL / TIOCNXCL). Best effort: the flock is the lock that
/// holds for every user; this one also stops unprivileged programs that do not lock.
#[allow(unsafe_code)]
fn set_exclusive(file: &File, on: bool) {
    let request = if on { libc::TIOCEXCL } else { libc::TIOCNXCL };
    // SAFETY: TIOCEXCL and TIOCNXCL take no argument and only change the tty's state; the descriptor is open
    // for the whole call (borrowed from `file`).
    unsafe {
        libc::ioctl(file.as_raw_fd(), request);
    }
}

/// The termios constant for a rate, if it has one.
fn baud_rate(baud: u32) -> Result<BaudRate, SerialError> {
    use BaudRate::*;
    let rates = [
        (50, B50),
        (75, B75),
        (110, B110),
        (134, B134),
        (150, B150),
        (200, B200),
        (300, B300),
        (600, B600),
        (1200, B1200),
        (1800, B1800),
        (2400, B2400),
        (4800, B4800),
        (9600, B9600),
        (19_200, B19200),
        (38_400, B38400),
        (57_600, B57600),
        (115_200, B115200),
        (230_400, B230400),
        (460_800, B460800),
        (500_000, B500000),
        (576_000, B576000),
        (921_600, B921600),
        (1_000_000, B1000000),
        (1_152_000, B1152000),
        (1_500_000, B1500000),
        (2_000_000, B2000000),
        (2_500_000, B2500000),
        (3_000_000, B3000000),
        (3_500_000, B3500000),
        (4_000_000, B4000000),
    ];
    rates.iter().find(|(b, _)| *b == baud).map(|&(_, rate)| rate).ok_or(SerialError::UnsupportedBaud(baud))
}

/// Raw mode (no echo, no line editing, no translation) with the line's framing and flow control; reads
/// return as soon as one byte is there (VMIN 1, VTIME 0: the driver does its own timing with poll).
fn configure(t: &mut Termios, baud: BaudRate, line: &LineSettings) {
    termios::cfmakeraw(t);
    let _ = termios::cfsetspeed(t, baud);
    let c = &mut t.control_flags;
    c.remove(ControlFlags::CSIZE | ControlFlags::PARENB | ControlFlags::PARODD | ControlFlags::CSTOPB);
    c.remove(ControlFlags::CRTSCTS);
    c.insert(ControlFlags::CREAD | ControlFlags::CLOCAL);
    c.insert(match line.data_bits {
        5 => ControlFlags::CS5,
        6 => ControlFlags::CS6,
        7 => ControlFlags::CS7,
        _ => ControlFlags::CS8,
    });
    match line.parity {
        Parity::None => {}
        Parity::Even => c.insert(ControlFlags::PARENB),
        Parity::Odd => c.insert(ControlFlags::PARENB | ControlFlags::PARODD),
    }
    if line.stop_bits == 2 {
        c.insert(ControlFlags::CSTOPB);
    }
    t.input_flags.remove(InputFlags::IXON | InputFlags::IXOFF | InputFlags::IXANY);
    match line.flow {
        FlowControl::None => {}
        FlowControl::RtsCts => t.control_flags.insert(ControlFlags::CRTSCTS),
        FlowControl::XonXoff => t.input_flags.insert(InputFlags::IXON | InputFlags::IXOFF),
    }
    t.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
    t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
}

/// Every setting asked for, compared with what the device reports; the first difference, named.
fn check(wanted: &Termios, got: &Termios, line: &LineSettings) -> Result<(), String> {
    let (asked, set) = (termios::cfgetospeed(wanted), termios::cfgetospeed(got));
    if asked != set || termios::cfgetispeed(got) != asked {
        return Err(format!("baud rate {} (the device reports {set:?})", line.baud));
    }
    let framing = ControlFlags::CSIZE | ControlFlags::PARENB | ControlFlags::PARODD | ControlFlags::CSTOPB;
    if wanted.control_flags & framing != got.control_flags & framing {
        return Err(format!("character framing {} (data bits, parity or stop bits)", line.short()));
    }
    let flow = wanted.control_flags & ControlFlags::CRTSCTS != got.control_flags & ControlFlags::CRTSCTS
        || wanted.input_flags & (InputFlags::IXON | InputFlags::IXOFF)
            != got.input_flags & (InputFlags::IXON | InputFlags::IXOFF);
    if flow {
        return Err(format!("flow control {:?}", line.flow));
    }
    Ok(())
}

impl EchoLink for SerialPort {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)
    }

    fn receive(&mut self, buffer: &mut [u8], timeout: Duration) -> std::io::Result<usize> {
        read_within(&self.file, buffer, timeout)
    }

    fn is_datagram(&self) -> bool {
        false
    }

    fn try_clone(&self) -> std::io::Result<Box<dyn EchoLink>> {
        let file = self.file.try_clone()?;
        Ok(Box::new(SerialPort { file, path: self.path.clone(), lock: self.lock.clone() }))
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// Waits up to `timeout` for bytes on the port and reads them: `Ok(0)` when none came. A hang-up (the
/// other end of a pty closed, a USB adapter unplugged) is an error.
fn read_within(mut file: &File, buffer: &mut [u8], timeout: Duration) -> std::io::Result<usize> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let millis = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX)) {
        Ok(0) | Err(nix::Error::EINTR) => return Ok(0),
        Ok(_) => {}
        Err(e) => return Err(e.into()),
    }
    let hung_up = fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLHUP) && !r.contains(PollFlags::POLLIN));
    let hang_up = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the serial line hung up");
    if hung_up {
        return Err(hang_up());
    }
    match file.read(buffer) {
        Ok(0) => Err(hang_up()),
        Ok(n) => Ok(n),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_all_puts_back_the_settings_of_ports_still_open() {
        let pty = nix::pty::openpty(None, None).expect("a pty pair");
        let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).expect("its path");
        let before = termios::tcgetattr(pty.slave.as_fd()).expect("settings");
        let line =
            LineSettings { baud: 115_200, data_bits: 8, parity: Parity::None, stop_bits: 1, flow: FlowControl::None };
        let port = SerialPort::open(&path, &line).expect("opens");
        let raw = termios::tcgetattr(pty.slave.as_fd()).expect("settings");
        assert_ne!(raw.local_flags, before.local_flags, "raw mode is on while the port is open");
        restore_all();
        let restored = termios::tcgetattr(pty.slave.as_fd()).expect("settings");
        assert_eq!(restored.local_flags, before.local_flags);
        assert_eq!(termios::cfgetospeed(&restored), termios::cfgetospeed(&before));
        drop(port);
        assert!(OPEN_PORTS.lock().expect("not poisoned").is_empty(), "a dropped port leaves the registry");
    }

    #[test]
    fn non_standard_rates_are_refused_before_opening() {
        assert!(matches!(baud_rate(12_345), Err(SerialError::UnsupportedBaud(12_345))));
        assert_eq!(baud_rate(115_200).ok(), Some(BaudRate::B115200));
    }
}
