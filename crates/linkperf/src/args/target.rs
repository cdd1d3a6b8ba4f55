//! Arguments naming the responder to test against, shared by every test.

use std::path::PathBuf;

use clap::Args;

use crate::exit::UsageError;

/// Where the responder is.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Host name or address of a running `linkperf serve`, with a port if not --port's: 198.18.0.2,
    /// 198.18.0.2:6000, `[2001:db8::2]:6000`, fe80::2%eth0. Omit it to start a responder inside this
    /// process on loopback (handy for a first try, and for IPC measurements).
    pub host: Option<String>,
    /// The responder's TCP and UDP port.
    #[arg(short, long, default_value_t = 5250)]
    pub port: u16,
    /// Unix-domain socket path of a responder started with `serve --unix PATH` (for --proto unix).
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// File holding the pre-shared key that the responder requires (the key never crosses the wire).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    #[command(flatten)]
    pub sockets: SocketArgs,
}

/// How the client's sockets leave this host.
#[derive(Debug, Clone, Default, Args)]
pub struct SocketArgs {
    /// Send every test socket from this local address (and port): 198.18.0.1, `[2001:db8::1]:6000`, or a
    /// link-local address with its interface, fe80::1%eth0. For hosts with several interfaces or addresses.
    #[arg(long, value_name = "ADDR[:PORT]")]
    pub bind: Option<String>,
    /// Send every test socket through this interface (SO_BINDTODEVICE; needs CAP_NET_RAW, i.e. root).
    #[arg(long, value_name = "IFACE")]
    pub bind_dev: Option<String>,
    /// Mark every packet the client sends with this DSCP: a name (ef, af41, cs1, va, le) or 0-63.
    #[arg(long, value_name = "NAME|NUMBER", value_parser = linkperf_core::socket_setup::parse_dscp, conflicts_with = "tos")]
    pub dscp: Option<u8>,
    /// Set the whole IPv4 TOS byte / IPv6 traffic class (0-255: DSCP in the upper 6 bits, ECN in the lower 2).
    #[arg(long, value_name = "BYTE", value_parser = tos)]
    pub tos: Option<u8>,
}

/// Reads a TOS byte: decimal (184) or hexadecimal (0xb8).
fn tos(text: &str) -> Result<u8, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16),
        None => text.parse::<u8>(),
    };
    parsed.map_err(|_| format!("'{text}' is not a TOS byte: 0 to 255, or 0x00 to 0xff"))
}

impl SocketArgs {
    /// The options of the client's sockets, checked.
    pub fn options(&self) -> Result<linkperf_net::SocketOptions, linkperf_net::NetError> {
        Ok(linkperf_net::SocketOptions {
            bind: self.bind.as_deref().map(linkperf_net::target::parse_bind).transpose()?,
            device: self.bind_dev.clone(),
            tos: self.tos(),
        })
    }

    /// The TOS byte asked for: `--tos`, or `--dscp` in its upper six bits.
    pub fn tos(&self) -> Option<u8> {
        self.tos.or(self.dscp.map(|dscp| dscp << 2))
    }

    /// Whether any option was given.
    pub fn any(&self) -> bool {
        self.bind.is_some() || self.bind_dev.is_some() || self.dscp.is_some() || self.tos.is_some()
    }
}

impl TargetArgs {
    /// Reads the key file, if one was given.
    pub fn key(&self) -> Result<Option<Vec<u8>>, UsageError> {
        self.key_file.as_deref().map(read_key).transpose()
    }
}

/// The shortest key accepted, in bytes: a key is an HMAC-SHA256 secret, and one shorter than 16 bytes (128
/// bits) can be guessed offline from one recorded handshake.
pub const MIN_KEY_BYTES: usize = 16;

/// The longest key file read, in bytes (a key is a secret, not a document).
const MAX_KEY_FILE_BYTES: u64 = 64 * 1024;

/// Reads a key file: its bytes, without a trailing newline. Refused: a file that is not a regular file (a
/// FIFO or device would hang or never end), one that others than its owner may read (the key is then no
/// secret), and a key shorter than [`MIN_KEY_BYTES`].
pub fn read_key(path: &std::path::Path) -> Result<Vec<u8>, UsageError> {
    use std::io::Read;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let shown = path.display();
    let unreadable = |e: std::io::Error| UsageError(format!("could not read key file {shown}: {e}"));
    // Opened without blocking, so that a FIFO with no writer cannot hang start-up; checked before reading.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(O_NONBLOCK).open(path).map_err(unreadable)?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(UsageError(format!("key file {shown} is not a regular file: give a file holding the key")));
    }
    let mode = metadata.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(UsageError(format!(
            "key file {shown} may be read by others than its owner (mode {:03o}): the key is no secret\nhint: chmod 600 {shown}",
            mode & 0o777
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_KEY_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(unreadable)?;
    if bytes.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err(UsageError(format!("key file {shown} is longer than {MAX_KEY_FILE_BYTES} bytes: is it a key?")));
    }
    let key = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let key = key.strip_suffix(b"\r").unwrap_or(key);
    if key.is_empty() {
        return Err(UsageError(format!("key file {shown} is empty")));
    }
    if key.len() < MIN_KEY_BYTES {
        return Err(UsageError(format!(
            "key file {shown} holds {} bytes, fewer than the {MIN_KEY_BYTES} a key needs\nhint: make one with: head -c 32 /dev/urandom > {shown}; chmod 600 {shown}",
            key.len()
        )));
    }
    Ok(key.to_vec())
}

/// `O_NONBLOCK` on Linux (the standard library does not name it).
const O_NONBLOCK: i32 = 0o4000;

#[cfg(test)]
mod tests {
    use super::*;

    fn key_file(dir: &std::path::Path, bytes: &[u8], mode: u32) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("key");
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_private_key_of_sixteen_bytes_or_more_is_read_without_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = key_file(dir.path(), b"0123456789abcdef\n", 0o600);
        assert_eq!(read_key(&path).unwrap(), b"0123456789abcdef");
    }

    #[test]
    fn short_shared_or_special_key_files_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let short = key_file(dir.path(), b"s3cret\n", 0o600);
        assert!(read_key(&short).unwrap_err().0.contains("fewer than the 16 a key needs"));
        let shared = key_file(dir.path(), b"0123456789abcdef", 0o644);
        assert!(read_key(&shared).unwrap_err().0.contains("chmod 600"));
        let group = key_file(dir.path(), b"0123456789abcdef", 0o640);
        assert!(read_key(&group).unwrap_err().0.contains("may be read by others"));
        assert!(read_key(dir.path()).unwrap_err().0.contains("not a regular file"));
    }
}
