//! Arguments naming the responder to test against, shared by every test.

use std::path::PathBuf;

use clap::Args;

use crate::exit::UsageError;

/// Where the responder is.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Host name or address of a running `linkperf serve`. Omit it to start a responder inside this
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
}

impl TargetArgs {
    /// Reads the key file, if one was given.
    pub fn key(&self) -> Result<Option<Vec<u8>>, UsageError> {
        self.key_file.as_deref().map(read_key).transpose()
    }
}

/// Reads a key file: its bytes, without a trailing newline. An empty key is refused.
pub fn read_key(path: &std::path::Path) -> Result<Vec<u8>, UsageError> {
    let bytes =
        std::fs::read(path).map_err(|e| UsageError(format!("could not read key file {}: {e}", path.display())))?;
    let key = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let key = key.strip_suffix(b"\r").unwrap_or(key);
    if key.is_empty() {
        return Err(UsageError(format!("key file {} is empty", path.display())));
    }
    Ok(key.to_vec())
}
