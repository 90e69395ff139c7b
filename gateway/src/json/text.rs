//! JSON literals written straight into a byte buffer, byte for byte as `serde_json`'s compact
//! serializer writes them: strings, unsigned numbers and `null`.
//!
//! [`write_str`] looks for the bytes that need escaping eight at a time (one `u64` per step,
//! with the bit tricks of "Bit Twiddling Hacks") and copies every clean run in one
//! `extend_from_slice`; only an escaped byte is handled on its own. `serde_json` checks a
//! table per byte, which for kilobyte message values was most of a receive reply's cost.

/// Bytes per step of the escape scan: one `u64`.
const WORD_BYTES: usize = 8;
/// `0x01` in every byte of a word.
const ONES: u64 = u64::from_ne_bytes([0x01; WORD_BYTES]);
/// `0x80` (the top bit) in every byte of a word.
const HIGHS: u64 = u64::from_ne_bytes([0x80; WORD_BYTES]);
/// Bytes below this are control characters, which JSON strings must escape.
const FIRST_PRINTABLE: u8 = 0x20;
/// The lowercase hex digits `serde_json` uses in `\u00XX`.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JSON string literal, quotes included. Escapes `"`, `\`, and the control
/// characters below 0x20 (`\b`, `\f`, `\n`, `\r`, `\t` by name, the rest as `\u00XX`);
/// everything else, `/`, DEL and non-ASCII text included, goes out as it is.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut clean_from = 0;
    while let Some(at) = next_escape(bytes, clean_from) {
        out.extend_from_slice(&bytes[clean_from..at]);
        write_escape(out, bytes[at]);
        clean_from = at + 1;
    }
    out.extend_from_slice(&bytes[clean_from..]);
    out.push(b'"');
}

/// Appends `n` in decimal.
pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `n` in decimal.
pub(crate) fn write_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Appends `null`.
pub(crate) fn write_null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"null");
}

/// The index of the first byte at or after `from` that must be escaped.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    let mut rest = bytes.get(from..)?;
    while let Some((word, tail)) = rest.split_first_chunk::<WORD_BYTES>() {
        let flags = escape_flags(u64::from_le_bytes(*word));
        if flags != 0 {
            return Some(at + flags.trailing_zeros() as usize / 8);
        }
        at += WORD_BYTES;
        rest = tail;
    }
    rest.iter()
        .position(|&byte| needs_escape(byte))
        .map(|offset| at + offset)
}

/// The top bit of each byte of `word` (little-endian) that needs escaping is set. A borrow
/// can also set it in a byte above a real hit, never below one, so the lowest set bit marks
/// the first byte to escape.
fn escape_flags(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * u64::from(FIRST_PRINTABLE)) & !word & HIGHS;
    control
        | zero_bytes(word ^ (ONES * u64::from(b'"')))
        | zero_bytes(word ^ (ONES * u64::from(b'\\')))
}

/// The top bit of each zero byte of `word` is set (and perhaps of bytes above one).
fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// Whether JSON strings must escape `byte`.
fn needs_escape(byte: u8) -> bool {
    byte < FIRST_PRINTABLE || byte == b'"' || byte == b'\\'
}

/// Appends the escape of `byte`, one of those [`needs_escape`] picks.
fn write_escape(out: &mut Vec<u8>, byte: u8) {
    let named = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0C => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        _ => {
            let high = HEX_DIGITS[usize::from(byte >> 4)];
            let low = HEX_DIGITS[usize::from(byte & 0x0F)];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', high, low]);
            return;
        }
    };
    out.extend_from_slice(&[b'\\', named]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).expect("utf-8")
    }

    fn serde(s: &str) -> String {
        serde_json::to_string(s).expect("serializes")
    }

    #[test]
    fn every_ascii_byte_alone_is_written_as_serde_json_writes_it() {
        for byte in 0..=0x7Fu8 {
            let s = char::from(byte).to_string();
            assert_eq!(written(&s), serde(&s), "byte {byte:#04x}");
        }
    }

    #[test]
    fn every_ascii_byte_at_every_alignment_of_a_longer_string_is_written_as_serde_json_writes_it() {
        for byte in 0..=0x7Fu8 {
            for position in 0..16 {
                let mut chars = ['a'; 40];
                chars[position] = char::from(byte);
                let s: String = chars.iter().collect();
                assert_eq!(written(&s), serde(&s), "byte {byte:#04x} at {position}");
            }
        }
    }

    #[test]
    fn two_escapes_in_one_word_and_at_its_edges_are_both_written() {
        for first in 0..16 {
            for second in first + 1..24 {
                let mut chars = ['x'; 30];
                chars[first] = '"';
                chars[second] = '\u{1f}';
                let s: String = chars.iter().collect();
                assert_eq!(written(&s), serde(&s), "at {first} and {second}");
            }
        }
    }

    #[test]
    fn non_ascii_text_del_and_slash_are_not_escaped() {
        for s in [
            "héllo wörld",
            "日本語のテキスト、八バイトより長い",
            "emoji 🦀🎉 and \u{7f} and / and \u{80}\u{ffff}\u{10ffff}",
            "\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}\u{7f}",
            "ÿÿÿÿÿÿÿÿÿÿ\"ÿÿ",
        ] {
            assert_eq!(written(s), serde(s), "{s:?}");
        }
    }

    #[test]
    fn the_empty_string_is_two_quotes() {
        assert_eq!(written(""), "\"\"");
    }

    #[test]
    fn strings_of_every_length_around_a_word_are_written_as_serde_json_writes_them() {
        for length in 0..=3 * WORD_BYTES {
            for tail in ["", "\n", "\\", "é"] {
                let s = format!("{}{tail}", "q".repeat(length));
                assert_eq!(written(&s), serde(&s), "{s:?}");
            }
        }
    }

    #[test]
    fn numbers_and_null_are_written_as_serde_json_writes_them() {
        for n in [0, 1, 9, 10, 4_294_967_295, u64::MAX] {
            let mut out = Vec::new();
            write_u64(&mut out, n);
            assert_eq!(out, serde_json::to_vec(&n).expect("serializes"));
        }
        for n in [0, 7, u32::MAX] {
            let mut out = Vec::new();
            write_u32(&mut out, n);
            assert_eq!(out, serde_json::to_vec(&n).expect("serializes"));
        }
        let mut out = Vec::new();
        write_null(&mut out);
        assert_eq!(out, serde_json::to_vec(&None::<u8>).expect("serializes"));
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(s in "(?s).{0,80}") {
            proptest::prop_assert_eq!(written(&s), serde(&s));
        }

        #[test]
        fn any_control_heavy_string_is_written_as_serde_json_writes_it(
            s in "[\\x00-\\x7f\"\\\\é🦀]{0,64}"
        ) {
            proptest::prop_assert_eq!(written(&s), serde(&s));
        }
    }
}
