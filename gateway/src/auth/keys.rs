//! Verification keys, each bound to exactly one algorithm by its `kid`: HS256 secrets (at
//! least [`MIN_HS256_SECRET_BYTES`]), RS256, ES256 and EdDSA public keys in PEM, and JWKS
//! files whose every key names its `kid` and `alg`. The algorithm is the key's, never the
//! token's.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::limits::MIN_HS256_SECRET_BYTES;

/// The key id of the secret in `WHARF_AUTH_HS256_SECRET`.
pub const DEFAULT_KID: &str = "default";

/// The algorithms Wharf accepts.
pub const SUPPORTED: &[(&str, Algorithm)] = &[
    ("HS256", Algorithm::HS256),
    ("RS256", Algorithm::RS256),
    ("ES256", Algorithm::ES256),
    ("EdDSA", Algorithm::EdDSA),
];

/// A key that could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// An HS256 secret is shorter than [`MIN_HS256_SECRET_BYTES`].
    #[error(
        "the HS256 secret of key id '{kid}' is {len} bytes; at least {MIN_HS256_SECRET_BYTES} bytes are required (e.g. `openssl rand -base64 48`)"
    )]
    ShortSecret {
        /// The key id.
        kid: String,
        /// Its length.
        len: usize,
    },
    /// The algorithm name is not one of [`SUPPORTED`].
    #[error(
        "key id '{kid}': unsupported algorithm '{alg}' (expected HS256, RS256, ES256 or EdDSA)"
    )]
    Algorithm {
        /// The key id.
        kid: String,
        /// The algorithm given.
        alg: String,
    },
    /// Two keys share an id.
    #[error("key id '{kid}' is configured twice")]
    DuplicateKid {
        /// The key id.
        kid: String,
    },
    /// A key file could not be read.
    #[error("key id '{kid}': cannot read {path}: {source}")]
    Read {
        /// The key id.
        kid: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The key material does not parse for its algorithm.
    #[error("key id '{kid}': not a valid {alg} key: {reason}")]
    Invalid {
        /// The key id.
        kid: String,
        /// The key's algorithm.
        alg: String,
        /// What is wrong.
        reason: String,
    },
}

/// A key as configured, before loading.
#[derive(Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySpec {
    /// The key id tokens name in their `kid` header.
    pub kid: String,
    /// `HS256`, `RS256`, `ES256` or `EdDSA`.
    pub alg: String,
    /// HS256 only: the secret itself.
    pub secret: Option<String>,
    /// RS256/ES256/EdDSA: a PEM file holding the public key (HS256: a file holding the
    /// secret).
    pub file: Option<PathBuf>,
}

impl fmt::Debug for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySpec")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("file", &self.file)
            .finish()
    }
}

/// A loaded key: its one algorithm and the verification key.
#[derive(Clone)]
pub struct VerifyKey {
    /// The only algorithm this key verifies.
    pub alg: Algorithm,
    /// The key.
    pub key: DecodingKey,
}

/// Every loaded key by `kid`. Its `Debug` shows ids and algorithms, never key material.
#[derive(Clone, Default)]
pub struct KeySet {
    keys: BTreeMap<String, VerifyKey>,
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.keys.iter().map(|(kid, key)| (kid, key.alg)))
            .finish()
    }
}

fn algorithm(kid: &str, alg: &str) -> Result<Algorithm, KeyError> {
    SUPPORTED
        .iter()
        .find(|(name, _)| *name == alg)
        .map(|(_, alg)| *alg)
        .ok_or_else(|| KeyError::Algorithm {
            kid: kid.to_owned(),
            alg: alg.to_owned(),
        })
}

fn read(kid: &str, path: &Path) -> Result<Vec<u8>, KeyError> {
    std::fs::read(path).map_err(|source| KeyError::Read {
        kid: kid.to_owned(),
        path: path.to_owned(),
        source,
    })
}

/// An HS256 verification key from a secret of at least [`MIN_HS256_SECRET_BYTES`].
pub fn hs256(kid: &str, secret: &[u8]) -> Result<VerifyKey, KeyError> {
    if secret.len() < MIN_HS256_SECRET_BYTES {
        return Err(KeyError::ShortSecret {
            kid: kid.to_owned(),
            len: secret.len(),
        });
    }
    Ok(VerifyKey {
        alg: Algorithm::HS256,
        key: DecodingKey::from_secret(secret),
    })
}

impl KeySpec {
    /// Loads the key: reads its file, checks its length or parses its PEM.
    pub fn load(&self) -> Result<VerifyKey, KeyError> {
        let alg = algorithm(&self.kid, &self.alg)?;
        let material = match (&self.secret, &self.file) {
            (Some(secret), None) if alg == Algorithm::HS256 => secret.as_bytes().to_vec(),
            (None, Some(path)) => read(&self.kid, path)?,
            _ => {
                return Err(self.invalid(
                    "give exactly one of `secret` (HS256 only) and `file` (a PEM public key, or the HS256 secret)",
                ));
            }
        };
        let key = match alg {
            Algorithm::HS256 => return hs256(&self.kid, trim_newline(&material)),
            Algorithm::RS256 => DecodingKey::from_rsa_pem(&material),
            Algorithm::ES256 => DecodingKey::from_ec_pem(&material),
            _ => DecodingKey::from_ed_pem(&material),
        }
        .map_err(|e| self.invalid(e.to_string()))?;
        Ok(VerifyKey { alg, key })
    }

    fn invalid(&self, reason: impl Into<String>) -> KeyError {
        KeyError::Invalid {
            kid: self.kid.clone(),
            alg: self.alg.clone(),
            reason: reason.into(),
        }
    }
}

fn trim_newline(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &bytes[..end]
}

impl KeySet {
    /// Adds a key under `kid`; an id used twice is an error.
    pub fn insert(&mut self, kid: &str, key: VerifyKey) -> Result<(), KeyError> {
        if self.keys.insert(kid.to_owned(), key).is_some() {
            return Err(KeyError::DuplicateKid {
                kid: kid.to_owned(),
            });
        }
        Ok(())
    }

    /// Adds every key of a JWKS file; each must have a `kid` and a supported `alg`.
    pub fn insert_jwks(&mut self, path: &Path) -> Result<(), KeyError> {
        let text = read("(jwks)", path)?;
        let set: JwkSet = serde_json::from_slice(&text).map_err(|e| KeyError::Invalid {
            kid: "(jwks)".into(),
            alg: "JWKS".into(),
            reason: format!("{}: {e}", path.display()),
        })?;
        for jwk in &set.keys {
            let kid = jwk.common.key_id.clone().ok_or_else(|| KeyError::Invalid {
                kid: "(jwks)".into(),
                alg: "JWKS".into(),
                reason: "every key needs a `kid`".into(),
            })?;
            let alg_name = jwk
                .common
                .key_algorithm
                .map(|alg| format!("{alg:?}"))
                .unwrap_or_default();
            let alg = algorithm(&kid, &alg_name)?;
            let key = DecodingKey::from_jwk(jwk).map_err(|e| KeyError::Invalid {
                kid: kid.clone(),
                alg: alg_name.clone(),
                reason: e.to_string(),
            })?;
            if alg == Algorithm::HS256 {
                hs256(&kid, key.as_bytes())?;
            }
            self.insert(&kid, VerifyKey { alg, key })?;
        }
        Ok(())
    }

    /// The key with this id.
    pub fn get(&self, kid: &str) -> Option<&VerifyKey> {
        self.keys.get(kid)
    }

    /// Whether no key is configured (auth is off).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Key ids and algorithms, for the startup log.
    pub fn describe(&self) -> String {
        self.keys
            .iter()
            .map(|(kid, key)| format!("{kid} ({:?})", key.alg))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hs256_secrets_are_checked_on_both_sides_of_the_minimum() {
        let short = vec![b'x'; MIN_HS256_SECRET_BYTES - 1];
        let error = hs256("default", &short).err().expect("too short");
        assert!(error.to_string().contains("at least 32"), "{error}");
        assert!(hs256("default", &[b'x'; MIN_HS256_SECRET_BYTES]).is_ok());
    }

    #[test]
    fn debug_output_never_shows_a_secret() {
        let spec = KeySpec {
            kid: "k".into(),
            alg: "HS256".into(),
            secret: Some("super-secret-value-super-secret-value".into()),
            file: None,
        };
        assert!(!format!("{spec:?}").contains("super-secret"));
        let mut set = KeySet::default();
        set.insert("k", spec.load().expect("valid"))
            .expect("new kid");
        assert!(!format!("{set:?}").contains("super-secret"));
    }
}
