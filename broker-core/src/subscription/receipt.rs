//! Receipts: opaque, unguessable tokens naming one delivery. A receipt is the delivery's
//! coordinates plus an HMAC-SHA256 tag (truncated to 128 bits) under a key kept in the data
//! folder, so receipts survive restarts and cannot be forged or altered.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Bytes of the key: HMAC-SHA256's block-size-safe 256 bits.
pub const RECEIPT_KEY_BYTES: usize = 32;
const TAG_BYTES: usize = 16;
const BODY_BYTES: usize = 8 + 4 + 8 + 8;
const VERSION: u8 = 1;

/// What a receipt names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiptData {
    /// The subscription incarnation's uid.
    pub subscription_uid: u64,
    /// The partition.
    pub partition: u32,
    /// The offset.
    pub offset: u64,
    /// The delivery's lease id.
    pub lease: u64,
}

/// Signs and checks receipts with one key.
#[derive(Clone)]
pub struct ReceiptCodec {
    // Keyed once: HMAC's key schedule hashes two blocks, as many as a receipt's own tag, so
    // cloning the keyed state halves the hashing per receipt.
    keyed: Hmac<Sha256>,
}

impl std::fmt::Debug for ReceiptCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReceiptCodec { key: <redacted> }")
    }
}

impl ReceiptCodec {
    /// A codec with this key.
    pub fn new(key: [u8; RECEIPT_KEY_BYTES]) -> Self {
        // HMAC accepts keys of any length, so this cannot fail.
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(&key).unwrap_or_else(|_| unreachable!());
        ReceiptCodec { keyed }
    }

    /// The receipt text for a delivery.
    pub fn encode(&self, data: ReceiptData) -> String {
        let mut bytes = Vec::with_capacity(1 + BODY_BYTES + TAG_BYTES);
        bytes.push(VERSION);
        bytes.extend_from_slice(&data.subscription_uid.to_be_bytes());
        bytes.extend_from_slice(&data.partition.to_be_bytes());
        bytes.extend_from_slice(&data.offset.to_be_bytes());
        bytes.extend_from_slice(&data.lease.to_be_bytes());
        let tag = self.tag(&bytes);
        bytes.extend_from_slice(&tag[..TAG_BYTES]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The delivery a receipt names, or `None` if it is malformed or its tag does not verify.
    pub fn decode(&self, receipt: &str) -> Option<ReceiptData> {
        if receipt.len() > 2 * (1 + BODY_BYTES + TAG_BYTES) {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(receipt).ok()?;
        if bytes.len() != 1 + BODY_BYTES + TAG_BYTES || bytes[0] != VERSION {
            return None;
        }
        let (signed, tag) = bytes.split_at(1 + BODY_BYTES);
        let mut mac = self.mac();
        mac.update(signed);
        mac.verify_truncated_left(tag).ok()?;
        let u64_at = |at: usize| {
            signed
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
        };
        let partition = signed
            .get(9..13)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)?;
        Some(ReceiptData {
            subscription_uid: u64_at(1)?,
            partition,
            offset: u64_at(13)?,
            lease: u64_at(21)?,
        })
    }

    fn mac(&self) -> Hmac<Sha256> {
        self.keyed.clone()
    }

    fn tag(&self, bytes: &[u8]) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(bytes);
        mac.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ReceiptData {
        ReceiptData {
            subscription_uid: 7,
            partition: 2,
            offset: 12_345,
            lease: 0xdead_beef,
        }
    }

    #[test]
    fn a_receipt_round_trips() {
        let codec = ReceiptCodec::new([9; RECEIPT_KEY_BYTES]);
        assert_eq!(codec.decode(&codec.encode(sample())), Some(sample()));
    }

    #[test]
    fn any_altered_character_is_refused() {
        let codec = ReceiptCodec::new([9; RECEIPT_KEY_BYTES]);
        let receipt = codec.encode(sample());
        for at in 0..receipt.len() {
            let mut altered: Vec<char> = receipt.chars().collect();
            altered[at] = if altered[at] == 'A' { 'B' } else { 'A' };
            let altered: String = altered.into_iter().collect();
            if altered != receipt {
                assert_eq!(codec.decode(&altered), None, "accepted a change at {at}");
            }
        }
    }

    #[test]
    fn another_key_and_garbage_are_refused() {
        let receipt = ReceiptCodec::new([9; RECEIPT_KEY_BYTES]).encode(sample());
        assert_eq!(
            ReceiptCodec::new([8; RECEIPT_KEY_BYTES]).decode(&receipt),
            None
        );
        let codec = ReceiptCodec::new([9; RECEIPT_KEY_BYTES]);
        for garbage in ["", "x", "!!!!", &"A".repeat(10_000)] {
            assert_eq!(codec.decode(garbage), None);
        }
    }
}
