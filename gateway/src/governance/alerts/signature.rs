//! The `Wharf-Signature` header of a webhook post: Stripe's scheme. The value is
//! `t=<unix secs>,v1=<hex HMAC-SHA256>`, the HMAC keyed by the rule's (or the server's) secret
//! over `"<t>.<body>"`. The timestamp is signed with the body, so a receiver that refuses
//! timestamps further than [`SIGNATURE_TOLERANCE_SECS`] from its clock cannot be replayed an
//! old event; several `v1` entries may appear (a secret being rotated), and one matching
//! suffices. Receivers written for Stripe's webhooks verify it unchanged.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::error::AlertError;
use crate::json::hex::lower_hex;

/// The header carrying the signature.
pub(crate) const SIGNATURE_HEADER: &str = "wharf-signature";
/// How far a signature's timestamp may be from the verifier's clock: five minutes, Stripe's
/// default, which covers the delivery's retries of one attempt and ordinary clock drift while
/// a captured post soon stops being accepted.
pub(crate) const SIGNATURE_TOLERANCE_SECS: u64 = 5 * 60;
/// Longest header a verifier reads: room for the timestamp and [`MAX_SIGNATURES`] entries;
/// past it the header is not ours, and the bound bounds the work of one verification.
pub(crate) const MAX_SIGNATURE_HEADER_BYTES: usize = 1024;
/// Most `v1` entries a verifier tries: one per secret in use during a rotation, with room.
pub(crate) const MAX_SIGNATURES: usize = 8;
/// Hex digits of an HMAC-SHA256.
const SIGNATURE_HEX_LEN: usize = 64;

/// Signs and verifies webhook bodies with one secret.
#[derive(Clone)]
pub struct WebhookSigner {
    key: Hmac<Sha256>,
}

impl std::fmt::Debug for WebhookSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSigner(<secret>)")
    }
}

impl WebhookSigner {
    /// Keyed by `secret`.
    pub fn new(secret: &[u8]) -> Self {
        let key = <Hmac<Sha256> as Mac>::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        WebhookSigner { key }
    }

    /// The header value for `body` posted at `unix_secs`.
    pub fn sign(&self, unix_secs: u64, body: &[u8]) -> String {
        let tag = self
            .mac(&unix_secs.to_string(), body)
            .finalize()
            .into_bytes();
        format!("t={unix_secs},v1={}", lower_hex(&tag))
    }

    /// Whether `header` signs `body` with this secret at a time within
    /// [`SIGNATURE_TOLERANCE_SECS`] of `now_secs`. Signatures are compared in constant time.
    pub fn verify(&self, header: &str, body: &[u8], now_secs: u64) -> Result<(), AlertError> {
        let parsed = parse(header)?;
        if parsed.unix_secs.abs_diff(now_secs) > SIGNATURE_TOLERANCE_SECS {
            return Err(AlertError::SignatureExpired {
                signed_at_secs: parsed.unix_secs,
                now_secs,
                tolerance_secs: SIGNATURE_TOLERANCE_SECS,
            });
        }
        let mac = self.mac(parsed.t, body);
        let matched = parsed
            .signatures
            .iter()
            .any(|signature| mac.clone().verify_slice(signature).is_ok());
        if matched {
            Ok(())
        } else {
            Err(AlertError::SignatureMismatch)
        }
    }

    /// The HMAC over `"<t>.<body>"`, `t` as the header writes it.
    fn mac(&self, t: &str, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.key.clone();
        mac.update(t.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }
}

/// A header's timestamp and `v1` signatures; other schemes (`v0`, future ones) are skipped.
struct Parsed<'a> {
    t: &'a str,
    unix_secs: u64,
    signatures: Vec<[u8; 32]>,
}

fn parse(header: &str) -> Result<Parsed<'_>, AlertError> {
    let malformed = |reason| AlertError::SignatureMalformed { reason };
    if header.len() > MAX_SIGNATURE_HEADER_BYTES {
        return Err(malformed("longer than 1024 bytes"));
    }
    let mut t = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (name, value) = part
            .trim()
            .split_once('=')
            .ok_or_else(|| malformed("expected name=value pairs"))?;
        match name {
            "t" if t.is_some() => return Err(malformed("more than one t")),
            "t" => {
                let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
                let secs = value
                    .parse()
                    .ok()
                    .filter(|_| digits)
                    .ok_or_else(|| malformed("t is not unix seconds"))?;
                t = Some((value, secs));
            }
            "v1" if signatures.len() == MAX_SIGNATURES => {
                return Err(malformed("more than 8 v1 signatures"));
            }
            "v1" => {
                signatures.push(unhex(value).ok_or_else(|| malformed("v1 is not 64 hex digits"))?)
            }
            _ => {}
        }
    }
    let (t, unix_secs) = t.ok_or_else(|| malformed("no t"))?;
    if signatures.is_empty() {
        return Err(malformed("no v1 signature"));
    }
    Ok(Parsed {
        t,
        unix_secs,
        signatures,
    })
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    if text.len() != SIGNATURE_HEX_LEN {
        return None;
    }
    let mut bytes = [0; 32];
    for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(bytes)
}

/// One hex digit's value; unlike `u8::from_str_radix`, no sign is taken.
fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_0123456789abcdef0123456789ab";
    const NOW: u64 = 1_800_000_000;
    const BODY: &[u8] = br#"{"rule":"r","state":"firing"}"#;

    #[test]
    fn a_signature_has_stripes_shape_and_verifies_within_the_tolerance() {
        let signer = WebhookSigner::new(SECRET);
        let header = signer.sign(NOW, BODY);
        let (t, v1) = header.split_once(",v1=").expect("two parts");
        assert_eq!(t, format!("t={NOW}"));
        assert_eq!(v1.len(), SIGNATURE_HEX_LEN);
        assert!(
            v1.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        for now in [
            NOW,
            NOW + SIGNATURE_TOLERANCE_SECS,
            NOW - SIGNATURE_TOLERANCE_SECS,
        ] {
            assert_eq!(signer.verify(&header, BODY, now), Ok(()), "at {now}");
        }
        for now in [
            NOW + SIGNATURE_TOLERANCE_SECS + 1,
            NOW - SIGNATURE_TOLERANCE_SECS - 1,
        ] {
            assert!(matches!(
                signer.verify(&header, BODY, now),
                Err(AlertError::SignatureExpired { .. })
            ));
        }
        assert!(!format!("{signer:?}").contains("whsec"));
    }

    #[test]
    fn the_tag_is_the_hmac_of_the_timestamp_a_dot_and_the_body() {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(SECRET).expect("a key");
        mac.update(format!("{NOW}.").as_bytes());
        mac.update(BODY);
        let expected = lower_hex(&mac.finalize().into_bytes());
        let header = WebhookSigner::new(SECRET).sign(NOW, BODY);
        assert_eq!(header, format!("t={NOW},v1={expected}"));
    }

    #[test]
    fn a_changed_body_timestamp_signature_or_secret_fails() {
        let signer = WebhookSigner::new(SECRET);
        let header = signer.sign(NOW, BODY);
        let mismatch = Err(AlertError::SignatureMismatch);
        assert_eq!(
            signer.verify(&header, br#"{"rule":"r","state":"resolved"}"#, NOW),
            mismatch
        );
        let moved = header.replacen(&format!("t={NOW}"), &format!("t={}", NOW + 1), 1);
        assert_eq!(
            signer.verify(&moved, BODY, NOW),
            mismatch,
            "the timestamp is signed"
        );
        let padded = header.replacen("t=", "t=0", 1);
        assert_eq!(
            signer.verify(&padded, BODY, NOW),
            mismatch,
            "signed as written"
        );
        let last = header.chars().last().expect("not empty");
        let flipped = format!(
            "{}{}",
            &header[..header.len() - 1],
            if last == '0' { '1' } else { '0' }
        );
        assert_eq!(signer.verify(&flipped, BODY, NOW), mismatch);
        let other = WebhookSigner::new(b"another secret");
        assert_eq!(other.verify(&header, BODY, NOW), mismatch);
    }

    #[test]
    fn any_matching_v1_passes_so_secrets_can_be_rotated_and_other_schemes_are_skipped() {
        let old = WebhookSigner::new(b"old secret");
        let new = WebhookSigner::new(SECRET);
        let new_header = new.sign(NOW, BODY);
        let (_, new_v1) = new_header.split_once(",v1=").expect("v1");
        let header = format!("{},v0=legacy, v1={new_v1}", old.sign(NOW, BODY));
        assert_eq!(new.verify(&header, BODY, NOW), Ok(()));
        assert_eq!(old.verify(&header, BODY, NOW), Ok(()));
    }

    #[test]
    fn malformed_headers_are_refused_with_a_reason() {
        let signer = WebhookSigner::new(SECRET);
        let good = signer.sign(NOW, BODY);
        let (_, v1) = good.split_once(",v1=").expect("v1");
        let too_many = format!("t={NOW}{}", format!(",v1={v1}").repeat(MAX_SIGNATURES + 1));
        let too_long = format!("{good},x={}", "a".repeat(MAX_SIGNATURE_HEADER_BYTES));
        for bad in [
            String::new(),
            format!("v1={v1}"),
            format!("t={NOW}"),
            format!("t=soon,v1={v1}"),
            format!("t=+{NOW},v1={v1}"),
            format!("t=,v1={v1}"),
            format!("t={NOW},v1=+{}", &v1[1..]),
            format!("t={NOW},t={NOW},v1={v1}"),
            format!("t={NOW},v1={}", &v1[1..]),
            format!("t={NOW},v1=zz{}", &v1[2..]),
            format!("t={NOW};v1={v1}"),
            too_many,
            too_long,
        ] {
            assert!(
                matches!(
                    signer.verify(&bad, BODY, NOW),
                    Err(AlertError::SignatureMalformed { .. })
                ),
                "{bad:?}"
            );
        }
        let at_limit = format!("t={NOW}{}", format!(",v1={v1}").repeat(MAX_SIGNATURES));
        assert!(at_limit.len() <= MAX_SIGNATURE_HEADER_BYTES);
        assert_eq!(signer.verify(&at_limit, BODY, NOW), Ok(()), "limit");
    }
}
