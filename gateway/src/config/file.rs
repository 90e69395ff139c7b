//! The TOML config file: its keys, and TOML values as setting text.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::cluster::{CLUSTER_KEYS, ClusterArgs};
use super::edge_args::{EDGE_KEYS, EdgeArgs, EdgeRaw};
use super::error::ConfigError;
use crate::auth::KeySpec;

/// The keys of the TOML config file other than the edge's ([`EDGE_KEYS`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileSettings {
    pub(super) listen: Option<String>,
    pub(super) data_dir: Option<PathBuf>,
    pub(super) fsync: Option<toml::Value>,
    pub(super) segment_bytes: Option<toml::Value>,
    pub(super) max_body_bytes: Option<toml::Value>,
    pub(super) min_free_bytes: Option<toml::Value>,
    pub(super) history_retention_minutes: Option<toml::Value>,
    pub(super) probe_interval_ms: Option<toml::Value>,
    pub(super) trace_index: Option<toml::Value>,
    pub(super) history: Option<toml::Value>,
    pub(super) allow_anonymous: Option<bool>,
    pub(super) alert_webhook_hosts: Option<toml::Value>,
    pub(super) alert_secret: Option<String>,
    /// `[[auth_keys]]` tables: `kid`, `alg`, and `secret` or `file`.
    #[serde(default)]
    pub(super) auth_keys: Vec<KeySpec>,
}

/// A TOML value as setting text: strings as they are, numbers and booleans written out,
/// arrays joined with commas.
pub(super) fn value_text(value: toml::Value) -> String {
    match value {
        toml::Value::String(text) => text,
        toml::Value::Array(items) => items
            .into_iter()
            .map(value_text)
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// Reads the file: edge keys are merged under `edge` flags, the rest must be known keys.
pub(super) fn read_file(
    path: &Path,
    edge: EdgeArgs,
    cluster: ClusterArgs,
) -> Result<(FileSettings, EdgeRaw, ClusterArgs), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    let parse_error = |source| ConfigError::ParseFile {
        path: path.to_owned(),
        source,
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(parse_error)?;
    let mut edge_table = toml::Table::new();
    for key in EDGE_KEYS {
        if let Some(value) = table.remove(*key) {
            edge_table.insert((*key).to_owned(), value);
        }
    }
    let mut cluster_table = toml::Table::new();
    for key in CLUSTER_KEYS {
        if let Some(value) = table.remove(*key) {
            cluster_table.insert((*key).to_owned(), value);
        }
    }
    let file = FileSettings::deserialize(toml::Value::Table(table)).map_err(parse_error)?;
    Ok((
        file,
        edge.merge(&mut edge_table),
        cluster.merge(&mut cluster_table),
    ))
}

/// A temporary config file holding `text`.
#[cfg(test)]
pub(super) fn config_file(text: &str) -> tempfile::NamedTempFile {
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    file
}

#[cfg(test)]
mod tests {
    use super::config_file as file;
    use crate::config::ServeArgs;

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
