//! How the client's sockets left its host: source address, interface and IP marks (`--bind`, `--bind-dev`,
//! `--dscp`, `--tos`). Kept with a run so that runs that differ in them are not mistaken for each other.

use serde::{Deserialize, Serialize};

/// The client's socket options of a run, as asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketSetup {
    /// The local address (and port) the client sent from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// The interface the client's sockets were bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The IPv4 TOS byte or IPv6 traffic class of every packet the client sent: DSCP in the upper six bits,
    /// ECN in the lower two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
}

impl SocketSetup {
    /// Whether nothing was asked.
    pub fn is_default(&self) -> bool {
        *self == SocketSetup::default()
    }
}

impl std::fmt::Display for SocketSetup {
    /// `from 198.18.0.5, via eth1, TOS 0xb8 (DSCP 46, EF)`, or `default`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        parts.extend(self.bind.as_ref().map(|b| format!("from {b}")));
        parts.extend(self.device.as_ref().map(|d| format!("via {d}")));
        if let Some(tos) = self.tos {
            let dscp = tos >> 2;
            let name = dscp_name(dscp).map(|n| format!(", {}", n.to_ascii_uppercase())).unwrap_or_default();
            parts.push(format!("TOS 0x{tos:02x} (DSCP {dscp}{name}, ECN {})", tos & 3));
        }
        match parts.is_empty() {
            true => write!(f, "default"),
            false => write!(f, "{}", parts.join(", ")),
        }
    }
}

/// The DSCP code points with names (RFC 2474 class selectors, RFC 2597 assured forwarding, RFC 3246
/// expedited forwarding, RFC 5865 voice admit, RFC 8622 lower effort).
const DSCP_NAMES: [(&str, u8); 23] = [
    ("cs0", 0),
    ("le", 1),
    ("cs1", 8),
    ("af11", 10),
    ("af12", 12),
    ("af13", 14),
    ("cs2", 16),
    ("af21", 18),
    ("af22", 20),
    ("af23", 22),
    ("cs3", 24),
    ("af31", 26),
    ("af32", 28),
    ("af33", 30),
    ("cs4", 32),
    ("af41", 34),
    ("af42", 36),
    ("af43", 38),
    ("cs5", 40),
    ("va", 44),
    ("ef", 46),
    ("cs6", 48),
    ("cs7", 56),
];

/// The name of a DSCP code point, if it has one.
pub fn dscp_name(dscp: u8) -> Option<&'static str> {
    DSCP_NAMES.iter().find(|(_, value)| *value == dscp).map(|(name, _)| *name)
}

/// Reads a DSCP: a name (`ef`, `af41`, `cs1`, case-insensitive) or a number from 0 to 63.
pub fn parse_dscp(text: &str) -> Result<u8, String> {
    let lower = text.trim().to_ascii_lowercase();
    if let Some((_, value)) = DSCP_NAMES.iter().find(|(name, _)| *name == lower) {
        return Ok(*value);
    }
    match lower.parse::<u8>() {
        Ok(value) if value < 64 => Ok(value),
        _ => Err(format!("'{text}' is not a DSCP: a number from 0 to 63, or a name (ef, af11-af43, cs0-cs7, va, le)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dscp_reads_names_and_numbers() {
        assert_eq!(parse_dscp("EF"), Ok(46));
        assert_eq!(parse_dscp("af41"), Ok(34));
        assert_eq!(parse_dscp("63"), Ok(63));
        assert!(parse_dscp("64").unwrap_err().contains("0 to 63"));
        assert!(parse_dscp("gold").is_err());
    }

    #[test]
    fn a_setup_says_what_was_asked() {
        let setup = SocketSetup { bind: Some("198.18.0.5".into()), device: None, tos: Some(46 << 2) };
        assert_eq!(setup.to_string(), "from 198.18.0.5, TOS 0xb8 (DSCP 46, EF, ECN 0)");
        assert_eq!(SocketSetup::default().to_string(), "default");
    }
}
