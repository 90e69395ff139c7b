//! [`ConfigError`]: what failed to load or validate, naming the setting and the value.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A setting that failed to load or validate.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A setting's value is malformed or out of range.
    #[error("invalid setting {setting} = {value:?}: {reason}")]
    Invalid {
        /// The setting's file key (flags and env vars are named after it).
        setting: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML or has unknown keys.
    #[error("invalid config file {path}: {source}")]
    ParseFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: toml::de::Error,
    },
    /// The config file has a key no setting is named after.
    #[error("invalid config file {path}: unknown key `{key}`")]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
    },
    /// A verification key could not be loaded.
    #[error("invalid auth key: {0}")]
    Key(#[from] crate::auth::KeyError),
    /// Asked to serve a non-loopback address with no keys and no `--allow-anonymous`.
    #[error(
        "refusing to listen on {listen} without authentication: anyone who can reach it could \
         read and delete every topic. Set WHARF_AUTH_HS256_SECRET (at least 32 bytes; mint \
         tokens with `wharf token`), or configure keys, or pass --allow-anonymous \
         (WHARF_ALLOW_ANONYMOUS=true) to serve without auth anyway"
    )]
    AnonymousOnNetwork {
        /// The address asked for.
        listen: SocketAddr,
    },
}

/// The error of a setting whose value is malformed or out of range.
pub(super) fn invalid(
    setting: &'static str,
    value: &str,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::Invalid {
        setting,
        value: value.to_owned(),
        reason: reason.into(),
    }
}
