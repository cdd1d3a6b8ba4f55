//! Text that came from elsewhere (a responder's error, a host name, a label or command of an imported run)
//! made safe to show on a terminal: control characters, escape sequences and the invisible characters that
//! reorder or hide text are written as visible escapes, so that such text can neither move the cursor,
//! recolour or retitle the terminal, nor forge or hide lines of the output.
//!
//! This module only transforms strings; the binary decides where output reaches a terminal.

use std::borrow::Cow;

/// Whether newlines pass as they are (multi-line output of our own that embeds foreign text) or are escaped
/// too (a value that must stay on its line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Newlines {
    /// `\n` is kept.
    Keep,
    /// `\n` is written as `\n`.
    Escape,
}

/// `text` with every character that a terminal would act on or hide written as an escape: C0 and C1
/// controls (`\x1b`, `\r`, `\t`, `\u{9b}`), DEL, and the bidirectional and zero-width format characters
/// (`\u{202e}`). Text without any is returned as it is.
pub fn escape(text: &str, newlines: Newlines) -> Cow<'_, str> {
    let unsafe_char = |c: char| is_unsafe(c) && !(c == '\n' && newlines == Newlines::Keep);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Control characters, and the format characters that reorder (bidirectional overrides and isolates) or
/// hide (zero-width) text.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_sequences_and_controls_become_visible_escapes() {
        let hostile = "evil\x1b]0;owned\x07\x1b[2J\rline\u{9b}31m\u{202e}txt";
        assert_eq!(escape(hostile, Newlines::Keep), "evil\\x1b]0;owned\\x07\\x1b[2J\\rline\\x9b31m\\u{202e}txt");
    }

    #[test]
    fn newlines_are_kept_or_escaped_as_asked_and_plain_text_is_untouched() {
        assert_eq!(escape("a\nb", Newlines::Keep), "a\nb");
        assert_eq!(escape("a\nb\tc", Newlines::Escape), "a\\nb\\tc");
        let plain = "latency over tcp to bench-a: 12.5 µs ± 0.3";
        assert!(matches!(escape(plain, Newlines::Escape), Cow::Borrowed(_)));
    }
}
