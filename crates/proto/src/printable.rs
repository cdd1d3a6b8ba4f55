//! `printable`: text from a peer made safe to print on a terminal or in a log line.
//!
//! A peer's host name, error text or decoder message may hold newlines (a forged log line), terminal
//! escape sequences (a rewritten screen) or megabytes (a flooded log). Every such text goes through
//! [`printable`] before it is printed: control characters are escaped as `\n`, `\u{1b}`, ... and the length
//! is capped. It does not decide what is worth printing.

use std::fmt::Write;

/// The most characters of one peer text printed by default.
pub const MAX_PRINTED_CHARS: usize = 200;

/// `text` with every control character (C0, DEL, C1, and the bidirectional overrides) escaped, cut after
/// `max_chars` characters with a note of how much was left out.
pub fn printable(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 2));
    for (taken, c) in text.chars().enumerate() {
        if taken == max_chars {
            let _ =
                write!(out, "... ({} more bytes)", text.len() - text.char_indices().nth(taken).map_or(0, |(i, _)| i));
            return out;
        }
        if is_unsafe(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_escapes_are_shown_not_obeyed() {
        assert_eq!(printable("a\nb", 100), "a\\nb");
        assert_eq!(printable("\u{1b}[2Jgone", 100), "\\u{1b}[2Jgone");
        assert_eq!(printable("x\u{202e}y\u{7f}", 100), "x\\u{202e}y\\u{7f}");
        assert_eq!(printable("plain text, ü", 100), "plain text, ü");
    }

    #[test]
    fn long_texts_are_cut_with_a_count() {
        let long = "a".repeat(65_000);
        assert_eq!(printable(&long, 5), "aaaaa... (64995 more bytes)");
    }
}
