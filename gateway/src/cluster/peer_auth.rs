//! Proof that a call on the cluster port comes from a node holding the cluster secret.
//!
//! The header is `Wharf-Cluster-Auth: <node id>.<unix ms>.<hex HMAC-SHA256>` where the HMAC,
//! keyed by the secret, covers `node id.unix ms`. A peer accepts it when the HMAC matches and
//! the time is within [`MAX_CLOCK_SKEW_MS`] of its own clock: the secret never travels, and a
//! captured header is good for that window only. The body is not covered (hashing every
//! replicated byte would cost more than the rest of the call); the cluster network is private,
//! and mutual TLS is the stronger option to add in front.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::json::hex::lower_hex;

/// The header carrying the proof.
pub const AUTH_HEADER: &str = "wharf-cluster-auth";
/// How far a caller's clock may be from ours: five minutes, so nodes with a drifting clock
/// (an injected offset of ±30 s, NTP catching up) still talk, while a captured header soon
/// expires.
pub const MAX_CLOCK_SKEW_MS: u64 = 5 * 60 * 1000;

/// Signs and checks the header with the cluster secret.
#[derive(Clone)]
pub struct PeerAuth {
    key: Hmac<Sha256>,
}

impl std::fmt::Debug for PeerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerAuth(<secret>)")
    }
}

impl PeerAuth {
    /// Keyed by `secret`.
    pub fn new(secret: &[u8]) -> PeerAuth {
        // HMAC takes a key of any length; this cannot fail.
        let key = <Hmac<Sha256> as Mac>::new_from_slice(secret)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
        PeerAuth { key }
    }

    /// A key derived from the secret for another use (HMAC of `purpose`): every node holding
    /// the secret derives the same one, and it reveals nothing of the secret.
    pub fn derive_key(&self, purpose: &str) -> [u8; 32] {
        let mut mac = self.key.clone();
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// The header value node `node` sends at `now_ms`.
    pub fn sign(&self, node: u64, now_ms: u64) -> String {
        let claim = format!("{node}.{now_ms}");
        let tag = self.tag(&claim);
        format!("{claim}.{tag}")
    }

    /// The calling node's id, if `header` is a valid proof at `now_ms`.
    pub fn verify(&self, header: &str, now_ms: u64) -> Option<u64> {
        let (claim, tag) = header.rsplit_once('.')?;
        let (node, at) = claim.split_once('.')?;
        let node: u64 = node.parse().ok()?;
        let at: u64 = at.parse().ok()?;
        if now_ms.abs_diff(at) > MAX_CLOCK_SKEW_MS {
            return None;
        }
        let expected = self.tag(claim);
        same_bytes(expected.as_bytes(), tag.as_bytes()).then_some(node)
    }

    fn tag(&self, claim: &str) -> String {
        let mut mac = self.key.clone();
        mac.update(claim.as_bytes());
        lower_hex(&mac.finalize().into_bytes())
    }
}

/// Compares in time independent of where the bytes differ.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_800_000_000_000;

    #[test]
    fn a_signed_header_names_its_node_and_nothing_else_passes() {
        let auth = PeerAuth::new(b"0123456789abcdef0123456789abcdef");
        let header = auth.sign(3, NOW);
        assert_eq!(auth.verify(&header, NOW), Some(3));
        assert_eq!(auth.verify(&header, NOW + MAX_CLOCK_SKEW_MS), Some(3));
        assert_eq!(
            auth.verify(&header, NOW + MAX_CLOCK_SKEW_MS + 1),
            None,
            "expired"
        );
        assert_eq!(
            auth.verify(&header, NOW - MAX_CLOCK_SKEW_MS - 1),
            None,
            "from the future"
        );
        let other = PeerAuth::new(b"another secret of thirty-two bytes!!");
        assert_eq!(other.verify(&header, NOW), None, "another secret");
        let forged = header.replacen("3.", "4.", 1);
        assert_eq!(auth.verify(&forged, NOW), None, "another node id");
        for bad in ["", "3", "3.1", "x.1.ab", &header[..header.len() - 1]] {
            assert_eq!(auth.verify(bad, NOW), None, "{bad:?} passed");
        }
        assert!(!format!("{auth:?}").contains("0123"));
    }

    #[test]
    fn the_tag_is_the_lowercase_hex_hmac_every_version_sends() {
        // RFC 4231, test case 2: nodes of different versions must agree on the spelling.
        let auth = PeerAuth::new(b"Jefe");
        assert_eq!(
            auth.tag("what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
