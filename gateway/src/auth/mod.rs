//! Authentication and authorization at the edge.
//!
//! # Layout
//! - [`keys`]: verification keys by `kid`, each bound to one algorithm.
//! - [`scope`]: `action:topic-glob` grants and glob matching.
//! - [`policy`]: the ONE route → access table.
//! - this module: [`Authenticator`] (bearer token → [`Principal`]) and [`mint_hs256`] (what
//!   `wharf token` prints).
//!
//! A token is checked in this order, and any failure is 401 `unauthorized` whose detail never
//! contains the token: length ([`MAX_TOKEN_BYTES`]), header (parsable, a supported `alg`, no
//! `jku`/`jwk`/`x5u`/`x5c`/`crit`), key (`kid`, or `default` without one), the header's `alg`
//! equal to the key's, the signature, `iss` and `aud` when configured, which are then required
//! too, a `sub`, then `exp` (required) and `nbf` with a small leeway, judged by the node's clock
//! ([`broker_core::clock::now_secs`]).

pub mod keys;
pub(crate) mod policy;
pub(crate) mod scope;

use std::fmt;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

pub use keys::{DEFAULT_KID, KeyError, KeySet, KeySpec};
pub use scope::{Action, Grants};

use crate::limits::MAX_TOKEN_BYTES;

/// Who is calling, as established by the edge; handlers read it from request extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The token's `sub`, or `anonymous` on a server without keys.
    pub subject: String,
    /// What the principal may do.
    pub grants: Grants,
    /// Whether auth is off and this is an unauthenticated client.
    pub anonymous: bool,
}

impl Principal {
    /// An unauthenticated client of a server without keys: every grant.
    pub fn anonymous() -> Principal {
        Principal {
            subject: "anonymous".to_owned(),
            grants: Grants::all(),
            anonymous: true,
        }
    }
}

/// Why a token was refused. Messages describe the failure, never the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("a bearer token is required (Authorization: Bearer <JWT>)")]
    Missing,
    /// The Authorization header is not `Bearer <token>`.
    #[error("the Authorization header must be `Bearer <JWT>`")]
    NotBearer,
    /// The token is longer than [`MAX_TOKEN_BYTES`].
    #[error("the token is longer than {MAX_TOKEN_BYTES} bytes")]
    TooLong,
    /// The token is not a well-formed JWT with a supported algorithm.
    #[error("the token is malformed or uses an unsupported algorithm")]
    Malformed,
    /// The header carries a key or key location; Wharf only trusts its configured keys.
    #[error("the token header must not carry keys or key URLs (jku, jwk, x5u, x5c) or crit")]
    HeaderKey,
    /// The `kid` names no configured key.
    #[error("the token's key id is not configured on this server")]
    UnknownKey,
    /// The header's `alg` is not the algorithm bound to the key.
    #[error("the token's algorithm does not match its key's")]
    WrongAlgorithm,
    /// The signature does not verify.
    #[error("the token's signature is invalid")]
    Signature,
    /// `exp` is past (beyond the leeway).
    #[error("the token has expired")]
    Expired,
    /// `nbf` is in the future (beyond the leeway).
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    /// A required claim is missing or malformed.
    #[error("the token lacks a required claim or has a malformed one ({0})")]
    Claim(String),
    /// `iss` is not the configured issuer.
    #[error("the token's issuer is not accepted")]
    Issuer,
    /// `aud` does not contain the configured audience.
    #[error("the token's audience is not accepted")]
    Audience,
}

/// The claims Wharf reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    /// The principal.
    pub sub: String,
    /// Expiry, Unix seconds.
    pub exp: u64,
    /// Space-separated grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Issued at, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    /// Audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
    /// Not before, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
}

/// Turns bearer tokens into principals with the configured keys.
#[derive(Clone, Default)]
pub struct Authenticator {
    keys: KeySet,
    issuer: Option<String>,
    audience: Option<String>,
    leeway_secs: u64,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("keys", &self.keys)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway_secs", &self.leeway_secs)
            .finish()
    }
}

impl Authenticator {
    /// An authenticator over `keys`; `issuer` and `audience`, when set, are required claims.
    pub fn new(
        keys: KeySet,
        issuer: Option<String>,
        audience: Option<String>,
        leeway_secs: u64,
    ) -> Self {
        Authenticator {
            keys,
            issuer,
            audience,
            leeway_secs,
        }
    }

    /// Whether auth is on (any key configured).
    pub fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The configured keys.
    pub fn keys(&self) -> &KeySet {
        &self.keys
    }

    /// Authenticates an `Authorization` header value.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Principal, AuthError> {
        let value = authorization.ok_or(AuthError::Missing)?;
        if value.len() > MAX_TOKEN_BYTES + 16 {
            return Err(AuthError::TooLong);
        }
        let text = std::str::from_utf8(value).map_err(|_| AuthError::NotBearer)?;
        let (scheme, token) = text.trim().split_once(' ').ok_or(AuthError::NotBearer)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(AuthError::NotBearer);
        }
        let claims = self.verify(token.trim())?;
        Ok(Principal {
            grants: Grants::parse(claims.scope.as_deref().unwrap_or_default()),
            subject: claims.sub,
            anonymous: false,
        })
    }

    /// Verifies a token and returns its claims.
    pub fn verify(&self, token: &str) -> Result<Claims, AuthError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::TooLong);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        if header.jku.is_some()
            || header.jwk.is_some()
            || header.x5u.is_some()
            || header.x5c.is_some()
            || header.crit.is_some()
        {
            return Err(AuthError::HeaderKey);
        }
        let kid = header.kid.as_deref().unwrap_or(DEFAULT_KID);
        let key = self.keys.get(kid).ok_or(AuthError::UnknownKey)?;
        if header.alg != key.alg {
            return Err(AuthError::WrongAlgorithm);
        }
        let claims = jsonwebtoken::decode::<Claims>(token, &key.key, &self.validation(key.alg))
            .map(|data| data.claims)
            .map_err(|error| match error.kind() {
                ErrorKind::InvalidSignature => AuthError::Signature,
                ErrorKind::ExpiredSignature => AuthError::Expired,
                ErrorKind::ImmatureSignature => AuthError::NotYetValid,
                ErrorKind::InvalidIssuer => AuthError::Issuer,
                ErrorKind::InvalidAudience => AuthError::Audience,
                ErrorKind::InvalidAlgorithm => AuthError::WrongAlgorithm,
                ErrorKind::MissingRequiredClaim(claim) | ErrorKind::InvalidClaimFormat(claim) => {
                    AuthError::Claim(claim.clone())
                }
                ErrorKind::Json(_) => AuthError::Claim("sub, exp or scope".to_owned()),
                _ => AuthError::Malformed,
            })?;
        self.check_times(&claims, now_secs())?;
        Ok(claims)
    }

    /// `exp` and `nbf` judged by the node's clock (jsonwebtoken would read the system clock
    /// itself) with the configured leeway: expired when `exp < now - leeway`, not yet valid
    /// when `nbf > now + leeway`, as jsonwebtoken judges them.
    fn check_times(&self, claims: &Claims, now: u64) -> Result<(), AuthError> {
        if claims.exp < now.saturating_sub(self.leeway_secs) {
            return Err(AuthError::Expired);
        }
        if claims
            .nbf
            .is_some_and(|nbf| nbf > now.saturating_add(self.leeway_secs))
        {
            return Err(AuthError::NotYetValid);
        }
        Ok(())
    }

    fn validation(&self, alg: jsonwebtoken::Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
        // exp and nbf are checked by `check_times`, on the node's clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        let mut required = vec!["exp", "sub"];
        match &self.issuer {
            Some(issuer) => {
                validation.set_issuer(&[issuer]);
                required.push("iss");
            }
            None => validation.iss = None,
        }
        match &self.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);
        validation
    }
}

/// What `wharf token` mints.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The `sub` claim.
    pub subject: String,
    /// The `scope` claim.
    pub scope: String,
    /// Lifetime in seconds.
    pub ttl_secs: u64,
    /// The key id to put in the header.
    pub kid: String,
    /// The `iss` claim, if any.
    pub issuer: Option<String>,
    /// The `aud` claim, if any.
    pub audience: Option<String>,
}

/// Seconds since the Unix epoch by the node's clock ([`broker_core::clock::now_secs`]).
pub fn now_secs() -> u64 {
    broker_core::clock::now_secs()
}

/// Mints an HS256 token with `secret` (checked like a server's: at least
/// [`crate::limits::MIN_HS256_SECRET_BYTES`]).
pub fn mint_hs256(secret: &[u8], request: &TokenRequest) -> Result<String, KeyError> {
    keys::hs256(&request.kid, secret)?;
    let now = now_secs();
    let claims = Claims {
        sub: request.subject.clone(),
        exp: now.saturating_add(request.ttl_secs),
        scope: Some(request.scope.clone()),
        iat: Some(now),
        iss: request.issuer.clone(),
        aud: request.audience.clone(),
        nbf: None,
    };
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(request.kid.clone());
    jsonwebtoken::encode(&header, &claims, &EncodingKey::from_secret(secret)).map_err(|e| {
        KeyError::Invalid {
            kid: request.kid.clone(),
            alg: "HS256".into(),
            reason: e.to_string(),
        }
    })
}

/// Parses a lifetime such as `90s`, `30m`, `1h`, `7d` or a bare number of seconds.
pub fn parse_ttl(text: &str) -> Option<u64> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((at, _)) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = number.parse().ok()?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    number.checked_mul(unit).filter(|secs| *secs > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn authenticator() -> Authenticator {
        let mut keys = KeySet::default();
        keys.insert(DEFAULT_KID, keys::hs256(DEFAULT_KID, SECRET).expect("key"))
            .expect("kid");
        Authenticator::new(keys, None, None, 5)
    }

    fn claims(exp: u64, nbf: Option<u64>) -> Claims {
        Claims {
            sub: "s".into(),
            exp,
            scope: None,
            iat: None,
            iss: None,
            aud: None,
            nbf,
        }
    }

    #[test]
    fn exp_and_nbf_are_judged_by_the_given_clock_with_the_leeway() {
        let auth = authenticator();
        let now = 1_000_000;
        assert_eq!(auth.check_times(&claims(now - 5, None), now), Ok(()));
        assert_eq!(
            auth.check_times(&claims(now - 6, None), now),
            Err(AuthError::Expired)
        );
        assert_eq!(auth.check_times(&claims(now, Some(now + 5)), now), Ok(()));
        assert_eq!(
            auth.check_times(&claims(now + 60, Some(now + 6)), now),
            Err(AuthError::NotYetValid)
        );
    }

    fn request(ttl_secs: u64) -> TokenRequest {
        TokenRequest {
            subject: "svc-a".into(),
            scope: "produce:orders.*".into(),
            ttl_secs,
            kid: DEFAULT_KID.into(),
            issuer: None,
            audience: None,
        }
    }

    #[test]
    fn a_minted_token_authenticates_with_its_grants() {
        let token = mint_hs256(SECRET, &request(60)).expect("mint");
        let principal = authenticator()
            .authenticate(Some(format!("Bearer {token}").as_bytes()))
            .expect("valid");
        assert_eq!(principal.subject, "svc-a");
        assert!(principal.grants.allows(Action::Produce, "orders.x"));
    }

    #[test]
    fn errors_never_contain_the_token() {
        let token = mint_hs256(SECRET, &request(60)).expect("mint");
        let tampered = format!("{token}x");
        let error = authenticator()
            .verify(&tampered)
            .expect_err("bad signature");
        assert!(!error.to_string().contains(&tampered[..20]));
    }

    #[test]
    fn lifetimes_parse_with_units() {
        assert_eq!(parse_ttl("1h"), Some(3600));
        assert_eq!(parse_ttl("30m"), Some(1800));
        assert_eq!(parse_ttl("45"), Some(45));
        assert_eq!(parse_ttl("2d"), Some(172_800));
        assert_eq!(parse_ttl("0s"), None);
        assert_eq!(parse_ttl("1w"), None);
    }
}
