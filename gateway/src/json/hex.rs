//! [`lower_hex`]: bytes as lowercase hex, the spelling of every MAC Wharf sends (the cluster
//! port's auth header, the alert webhooks' signature).

/// `bytes` as lowercase hex, two digits a byte. Both callers spell a MAC on every call
/// (the cluster port signs and checks one per RPC), so no formatter runs per byte.
pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_two_lowercase_digits() {
        assert_eq!(lower_hex(&[]), "");
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
