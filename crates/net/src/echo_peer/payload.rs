//! `Payload`: the bytes sent to an echoing peer, known in advance so that what comes back can be checked
//! byte by byte.
//!
//! The pattern walks through the residues modulo 251 (a prime, so it never lines up with a message size),
//! masked to the line's data bits (a 7-bit line cannot carry the top bit), and avoids XON and XOFF when the
//! line uses software flow control (the line would take them as commands, not data).

/// XON (DC1): resume sending, under software flow control.
const XON: u8 = 0x11;
/// XOFF (DC3): stop sending, under software flow control.
const XOFF: u8 = 0x13;

/// The bytes a test sends, as a function of their position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload {
    /// The bits a character carries (0xff on a network link).
    pub mask: u8,
    /// Whether XON and XOFF must not appear.
    pub avoid_xon_xoff: bool,
}

impl Default for Payload {
    fn default() -> Self {
        Self { mask: 0xff, avoid_xon_xoff: false }
    }
}

impl Payload {
    /// The byte at position `index` of a stream that started at `origin`.
    pub fn byte(&self, origin: u64, index: u64) -> u8 {
        let b = (origin.wrapping_mul(37).wrapping_add(index) % 251) as u8 & self.mask;
        if self.avoid_xon_xoff && (b == XON || b == XOFF) {
            b + 1
        } else {
            b
        }
    }

    /// Fills `buffer` with the bytes at positions `start..` of the stream that started at `origin`.
    pub fn fill(&self, origin: u64, start: u64, buffer: &mut [u8]) {
        for (i, b) in buffer.iter_mut().enumerate() {
            *b = self.byte(origin, start + i as u64);
        }
    }

    /// How many bytes of `received`, the bytes at positions `start..` of the stream from `origin`, differ
    /// from what was sent.
    pub fn differing(&self, origin: u64, start: u64, received: &[u8]) -> u64 {
        received.iter().enumerate().filter(|&(i, &b)| b != self.byte(origin, start + i as u64)).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seven_bit_payload_never_sets_the_top_bit_and_xon_xoff_can_be_avoided() {
        let p = Payload { mask: 0x7f, avoid_xon_xoff: true };
        let mut buffer = vec![0u8; 1000];
        p.fill(3, 0, &mut buffer);
        assert!(buffer.iter().all(|&b| b < 0x80 && b != XON && b != XOFF));
        assert_eq!(p.differing(3, 0, &buffer), 0);
        buffer[10] ^= 1;
        assert_eq!(p.differing(3, 0, &buffer), 1);
    }

    #[test]
    fn consecutive_messages_differ_so_a_stale_echo_is_not_taken_for_a_fresh_one() {
        let p = Payload::default();
        assert_ne!(p.byte(1, 0), p.byte(2, 0));
    }
}
