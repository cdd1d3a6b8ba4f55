//! `printable`: text from a peer made safe to print on a terminal or in a log line.
//!
//! A peer's host name, error text or decoder message may hold newlines (a forged log line), terminal
//! escape sequences (a rewritten screen) or megabytes (a flooded log). Every such text goes through
//! [`printable`] before it is printed: control characters are escaped as `\n`, `\x1b`, ... (by
//! `linkperf_core::terminal_text`, the one escaper of the workspace, so that text escaped here and shown
//! by the binary is escaped once and looks the same in a log and on a terminal) and the length is capped.
//! It does not decide what is worth printing.

use std::fmt::Write;

use linkperf_core::terminal_text::{escape, Newlines};

/// The most characters of one peer text printed by default.
pub const MAX_PRINTED_CHARS: usize = 200;

/// `text` with every control character (C0, DEL, C1) and bidirectional or zero-width format character escaped, cut after
/// `max_chars` characters with a note of how much was left out.
pub fn printable(text: &str, max_chars: usize) -> String {
    let (kept, left_out) = match text.char_indices().nth(max_chars) {
        Some((cut, _)) => (&text[..cut], Some(text.len() - cut)),
        None => (text, None),
    };
    let mut out = escape(kept, Newlines::Escape).into_owned();
    if let Some(left_out) = left_out {
        let _ = write!(out, "... ({left_out} more bytes)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_escapes_are_shown_not_obeyed() {
        assert_eq!(printable("a\nb", 100), "a\\nb");
        assert_eq!(printable("\u{1b}[2Jgone", 100), "\\x1b[2Jgone");
        assert_eq!(printable("x\u{202e}y\u{7f}", 100), "x\\u{202e}y\\x7f");
        assert_eq!(printable("plain text, ü", 100), "plain text, ü");
    }

    #[test]
    fn long_texts_are_cut_with_a_count() {
        let long = "a".repeat(65_000);
        assert_eq!(printable(&long, 5), "aaaaa... (64995 more bytes)");
    }
}
