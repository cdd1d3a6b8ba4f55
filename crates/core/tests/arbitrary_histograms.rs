//! A stored or imported result holds histograms as text; whatever that text is, decoding it returns a
//! histogram or an error, never a panic.

use linkperf_core::RttHistogram;
use proptest::prelude::*;

proptest! {
    #[test]
    fn histogram_text_of_any_characters_decodes_or_fails(text in "[A-Za-z0-9+/=]{0,400}") {
        let _ = RttHistogram::decode(&text);
    }

    #[test]
    fn damaged_histograms_decode_or_fail(at in 0usize..200, byte in any::<u8>(), cut in 0usize..200) {
        use base64::Engine;
        let mut h = RttHistogram::new();
        (1..=500u64).for_each(|v| h.record(v * 1_000));
        let mut raw = base64::engine::general_purpose::STANDARD.decode(h.encode()).unwrap_or_default();
        if !raw.is_empty() {
            let at = at % raw.len();
            raw[at] = byte;
            raw.truncate(raw.len().saturating_sub(cut % raw.len()));
        }
        let _ = RttHistogram::decode(&base64::engine::general_purpose::STANDARD.encode(raw));
    }
}
