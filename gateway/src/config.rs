//! Settings of `wharf serve`: parsed from flags, `WHARF_*` environment variables and a TOML
//! file (in that order of precedence, then defaults), validated as a whole, then frozen into
//! [`Settings`]. Every error names the setting and the value.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use broker_core::config::{DEFAULT_SEGMENT_BYTES, MIN_SEGMENT_BYTES};
use broker_core::limits::MAX_FRAME_BYTES;
use broker_core::{BrokerConfig, FsyncPolicy};
use serde::Deserialize;

/// Default listen address: loopback, so a fresh install is not open to the network.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default data folder, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "./wharf-data";
/// Default fsync policy: an ack means the data is on disk.
pub const DEFAULT_FSYNC: &str = "always";
/// Default largest request body: 8 MiB (API.md), room for a full batch of modest messages.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Smallest `max_body_bytes` accepted: below 1 KiB even a small JSON batch cannot be sent.
pub const MIN_MAX_BODY_BYTES: usize = 1024;

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
}

/// The flags of `wharf serve`; each falls back to its `WHARF_*` environment variable.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, IP:port [default: 127.0.0.1:8080].
    #[arg(long, env = "WHARF_LISTEN")]
    pub listen: Option<String>,
    /// Folder for the broker's data [default: ./wharf-data].
    #[arg(long, env = "WHARF_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// TOML file with the same keys as these flags (listen, data_dir, fsync, segment_bytes,
    /// max_body_bytes).
    #[arg(long, env = "WHARF_CONFIG")]
    pub config: Option<PathBuf>,
    /// When to fsync: `always`, `never`, or an interval in milliseconds [default: always].
    #[arg(long, env = "WHARF_FSYNC")]
    pub fsync: Option<String>,
    /// Segment file size in bytes [default: 64 MiB].
    #[arg(long, env = "WHARF_SEGMENT_BYTES")]
    pub segment_bytes: Option<String>,
    /// Largest request body in bytes [default: 8 MiB].
    #[arg(long, env = "WHARF_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<String>,
}

/// The keys of the TOML config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    fsync: Option<TextOrNumber>,
    segment_bytes: Option<TextOrNumber>,
    max_body_bytes: Option<TextOrNumber>,
}

/// A file value that may be written as a string or a bare number (`fsync = 100`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TextOrNumber {
    Number(i64),
    Text(String),
}

impl TextOrNumber {
    fn into_text(self) -> String {
        match self {
            TextOrNumber::Number(number) => number.to_string(),
            TextOrNumber::Text(text) => text,
        }
    }
}

/// Settings before validation: every value optional and still text.
#[derive(Debug, Clone, Default)]
pub struct RawSettings {
    /// See [`Settings::listen`].
    pub listen: Option<String>,
    /// See [`Settings::data_dir`].
    pub data_dir: Option<PathBuf>,
    /// See [`Settings::fsync`].
    pub fsync: Option<String>,
    /// See [`Settings::segment_bytes`].
    pub segment_bytes: Option<String>,
    /// See [`Settings::max_body_bytes`].
    pub max_body_bytes: Option<String>,
}

impl ServeArgs {
    /// Merges flags/env (already merged by clap) over the config file, then validates.
    pub fn load(self) -> Result<Settings, ConfigError> {
        let file = match &self.config {
            Some(path) => read_file(path)?,
            None => FileSettings::default(),
        };
        RawSettings {
            listen: self.listen.or(file.listen),
            data_dir: self.data_dir.or(file.data_dir),
            fsync: self.fsync.or(file.fsync.map(TextOrNumber::into_text)),
            segment_bytes: self
                .segment_bytes
                .or(file.segment_bytes.map(TextOrNumber::into_text)),
            max_body_bytes: self
                .max_body_bytes
                .or(file.max_body_bytes.map(TextOrNumber::into_text)),
        }
        .freeze()
    }
}

fn read_file(path: &Path) -> Result<FileSettings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|source| ConfigError::ParseFile {
        path: path.to_owned(),
        source,
    })
}

fn invalid(setting: &'static str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        setting,
        value: value.to_owned(),
        reason: reason.into(),
    }
}

fn parse_number<T: std::str::FromStr>(setting: &'static str, text: &str) -> Result<T, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(setting, text, "expected a non-negative whole number"))
}

impl RawSettings {
    /// Fills in defaults, parses and validates every value and their relations.
    pub fn freeze(self) -> Result<Settings, ConfigError> {
        let listen_text = self.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen = listen_text.parse().map_err(|_| {
            invalid(
                "listen",
                &listen_text,
                "expected IP:port, e.g. 127.0.0.1:8080",
            )
        })?;
        let data_dir = self
            .data_dir
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        if data_dir.as_os_str().is_empty() {
            return Err(invalid("data_dir", "", "must not be empty"));
        }
        let fsync_text = self.fsync.unwrap_or_else(|| DEFAULT_FSYNC.to_owned());
        let fsync = FsyncPolicy::parse(fsync_text.trim()).ok_or_else(|| {
            invalid(
                "fsync",
                &fsync_text,
                "expected always, never, or milliseconds > 0",
            )
        })?;
        let segment_bytes = match self.segment_bytes {
            Some(text) => parse_number::<u64>("segment_bytes", &text)?,
            None => DEFAULT_SEGMENT_BYTES,
        };
        if segment_bytes < MIN_SEGMENT_BYTES {
            return Err(invalid(
                "segment_bytes",
                &segment_bytes.to_string(),
                format!("must be at least {MIN_SEGMENT_BYTES}"),
            ));
        }
        let max_body_bytes = match self.max_body_bytes {
            Some(text) => parse_number::<usize>("max_body_bytes", &text)?,
            None => DEFAULT_MAX_BODY_BYTES,
        };
        if !(MIN_MAX_BODY_BYTES..=MAX_FRAME_BYTES).contains(&max_body_bytes) {
            return Err(invalid(
                "max_body_bytes",
                &max_body_bytes.to_string(),
                format!(
                    "must be {MIN_MAX_BODY_BYTES} to {MAX_FRAME_BYTES} (a body's batch must fit one log frame)"
                ),
            ));
        }
        Ok(Settings {
            listen,
            data_dir,
            fsync,
            segment_bytes,
            max_body_bytes,
        })
    }
}

/// Validated, frozen settings of one server.
#[derive(Debug, Clone)]
pub struct Settings {
    listen: SocketAddr,
    data_dir: PathBuf,
    fsync: FsyncPolicy,
    segment_bytes: u64,
    max_body_bytes: usize,
}

impl Settings {
    /// Defaults, with the given data folder and an ephemeral loopback port (for tests).
    pub fn ephemeral(data_dir: impl Into<PathBuf>) -> Result<Settings, ConfigError> {
        RawSettings {
            listen: Some("127.0.0.1:0".to_owned()),
            data_dir: Some(data_dir.into()),
            ..RawSettings::default()
        }
        .freeze()
    }

    /// Address to listen on.
    pub fn listen(&self) -> SocketAddr {
        self.listen
    }

    /// Folder holding the broker's data.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// When the log calls fsync.
    pub fn fsync(&self) -> FsyncPolicy {
        self.fsync
    }

    /// Segment file size in bytes.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// Largest request body accepted, in bytes.
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The broker's configuration.
    pub fn broker_config(&self) -> BrokerConfig {
        let mut config = BrokerConfig::new(&self.data_dir);
        config.log.fsync = self.fsync;
        config.log.segment_bytes = self.segment_bytes;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(text.as_bytes()).expect("write");
        file
    }

    #[test]
    fn defaults_are_loopback_fsync_always_and_eight_mebibyte_bodies() {
        let settings = RawSettings::default().freeze().expect("defaults are valid");
        assert_eq!(settings.listen().to_string(), DEFAULT_LISTEN);
        assert_eq!(settings.fsync(), FsyncPolicy::Always);
        assert_eq!(settings.max_body_bytes(), 8 * 1024 * 1024);
        assert_eq!(settings.segment_bytes(), DEFAULT_SEGMENT_BYTES);
    }

    #[test]
    fn flags_override_the_file_and_the_file_overrides_defaults() {
        let config = file("listen = \"0.0.0.0:9000\"\nfsync = 250\nsegment_bytes = 8192\n");
        let settings = ServeArgs {
            listen: Some("127.0.0.1:7000".into()),
            config: Some(config.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        assert_eq!(settings.listen().to_string(), "127.0.0.1:7000");
        assert_eq!(settings.fsync(), FsyncPolicy::IntervalMs(250));
        assert_eq!(settings.segment_bytes(), 8192);
    }

    #[test]
    fn errors_name_the_setting_and_the_value() {
        let error = RawSettings {
            fsync: Some("sometimes".into()),
            ..RawSettings::default()
        }
        .freeze()
        .expect_err("invalid");
        let text = error.to_string();
        assert!(
            text.contains("fsync") && text.contains("sometimes"),
            "{text}"
        );
        let error = RawSettings {
            segment_bytes: Some((MIN_SEGMENT_BYTES - 1).to_string()),
            ..RawSettings::default()
        }
        .freeze()
        .expect_err("too small");
        assert!(error.to_string().contains("segment_bytes"), "{error}");
    }

    #[test]
    fn body_limit_is_checked_on_both_sides() {
        let with = |bytes: usize| {
            RawSettings {
                max_body_bytes: Some(bytes.to_string()),
                ..RawSettings::default()
            }
            .freeze()
        };
        assert!(with(MIN_MAX_BODY_BYTES - 1).is_err());
        assert!(with(MIN_MAX_BODY_BYTES).is_ok());
        assert!(with(MAX_FRAME_BYTES).is_ok());
        assert!(with(MAX_FRAME_BYTES + 1).is_err());
    }

    #[test]
    fn unknown_file_keys_are_refused() {
        let config = file("lisen = \"x\"\n");
        let error = ServeArgs {
            config: Some(config.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect_err("typo");
        assert!(error.to_string().contains("lisen"), "{error}");
    }
}
