//! [`ServeArgs`]: the flags of `wharf serve` and their env vars, merged over the config file.

use std::path::PathBuf;

use super::alerts::AlertRaw;
use super::cluster::ClusterArgs;
use super::edge_args::EdgeArgs;
use super::error::ConfigError;
use super::file::{FileSettings, read_file, value_text};
use super::raw::RawSettings;
use super::settings::Settings;

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
    /// max_body_bytes, min_free_bytes, history_retention_minutes, probe_interval_ms,
    /// trace_index, history).
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
    /// Produces are refused with 507 while less than this many bytes are free on the data
    /// folder's file system, so deletes still work on a full disk; 0 turns it off
    /// [default: 128 MiB].
    #[arg(long, env = "WHARF_MIN_FREE_BYTES")]
    pub min_free_bytes: Option<String>,
    /// Comma-separated hosts alert webhooks may target: `hooks.example.com`,
    /// `*.example.com` (names under it), an IP address, each optionally `:port`
    /// [default: any http(s) host].
    #[arg(long, env = "WHARF_ALERT_WEBHOOK_HOSTS")]
    pub alert_webhook_hosts: Option<String>,
    /// The secret alert webhooks are signed with when a rule has none, at least 16 bytes
    /// [default: a random one made at each start].
    #[arg(long, env = "WHARF_ALERT_SECRET", hide_env_values = true)]
    pub alert_secret: Option<String>,
    /// Minutes of per-minute history kept per topic and subscription, 60 to 44640
    /// [default: 10080, 7 days].
    #[arg(long, env = "WHARF_HISTORY_RETENTION_MINUTES")]
    pub history_retention_minutes: Option<String>,
    /// Milliseconds between two synthetic probe rounds (a message produced, received and
    /// acked on the internal probe topic), 100 to 600000, or 0 for none [default: 10000].
    #[arg(long, env = "WHARF_PROBE_INTERVAL_MS")]
    pub probe_interval_ms: Option<String>,
    /// Keep the message trace: index each topic's logs for lookups by id or key and record
    /// every delivery; `false` turns the lookups off (501) [default: true].
    #[arg(long, env = "WHARF_TRACE_INDEX")]
    pub trace_index: Option<String>,
    /// Keep the per-minute history of topics and subscriptions; `false` turns
    /// `/v1/stats/history` and `/v1/stats/top` off (501) [default: true].
    #[arg(long, env = "WHARF_HISTORY")]
    pub history: Option<String>,
    /// Serve without authentication on a non-loopback address (no keys configured).
    #[arg(long, env = "WHARF_ALLOW_ANONYMOUS")]
    pub allow_anonymous: bool,
    /// Auth, limits and timeouts.
    #[command(flatten)]
    pub edge: EdgeArgs,
    /// Cluster membership (none: a single node).
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

impl ServeArgs {
    /// Merges flags/env (already merged by clap) over the config file, then validates.
    pub fn load(self) -> Result<Settings, ConfigError> {
        let (file, edge, cluster) = match &self.config {
            Some(path) => read_file(path, self.edge, self.cluster)?,
            None => (
                FileSettings::default(),
                self.edge.merge(&mut toml::Table::new()),
                self.cluster,
            ),
        };
        RawSettings {
            listen: self.listen.or(file.listen),
            data_dir: self.data_dir.or(file.data_dir),
            fsync: self.fsync.or(file.fsync.map(value_text)),
            segment_bytes: self.segment_bytes.or(file.segment_bytes.map(value_text)),
            max_body_bytes: self.max_body_bytes.or(file.max_body_bytes.map(value_text)),
            min_free_bytes: self.min_free_bytes.or(file.min_free_bytes.map(value_text)),
            history_retention_minutes: self
                .history_retention_minutes
                .or(file.history_retention_minutes.map(value_text)),
            history_hooks: None,
            probe_interval_ms: self
                .probe_interval_ms
                .or(file.probe_interval_ms.map(value_text)),
            probe_hooks: None,
            trace_index: self.trace_index.or(file.trace_index.map(value_text)),
            history: self.history.or(file.history.map(value_text)),
            allow_anonymous: self.allow_anonymous || file.allow_anonymous.unwrap_or(false),
            auth_keys: file.auth_keys,
            edge,
            cluster,
            alerts: AlertRaw {
                webhook_hosts: self
                    .alert_webhook_hosts
                    .or(file.alert_webhook_hosts.map(value_text)),
                secret: self.alert_secret.or(file.alert_secret),
                tick_ms: None,
            },
        }
        .freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::config_file as file;
    use broker_core::FsyncPolicy;

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
    fn trace_index_and_history_are_on_by_default_and_turned_off_by_file_or_flag() {
        let defaults = ServeArgs::default().load().expect("valid");
        assert!(defaults.trace_index() && defaults.history());
        let config = file("trace_index = false\nhistory = true\n");
        let settings = ServeArgs {
            config: Some(config.path().to_owned()),
            history: Some("false".into()),
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        assert!(!settings.trace_index() && !settings.history());
        assert!(!settings.broker_config().trace_index);
    }

    #[test]
    fn edge_keys_come_from_the_file_and_flags_override_them() {
        let config =
            file("max_headers = 20\nprincipal_requests_per_second = 5\ndocs_public = true\n");
        let settings = ServeArgs {
            config: Some(config.path().to_owned()),
            edge: EdgeArgs {
                max_headers: Some("30".into()),
                ..EdgeArgs::default()
            },
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        assert_eq!(settings.edge().max_headers, 30);
        assert_eq!(settings.edge().principal_requests_per_second, 5);
        assert!(settings.edge().docs_public);
    }

    #[test]
    fn cluster_keys_come_from_the_file_with_peers_as_a_table() {
        let config = file(
            "node_id = 1\nzone = \"a\"\ncluster_listen = \"127.0.0.1:7001\"\n\
             cluster_secret = \"0123456789abcdef0123456789abcdef\"\n\
             peers = { 1 = \"127.0.0.1:7001\", 2 = \"127.0.0.1:7002\" }\n",
        );
        let settings = ServeArgs {
            config: Some(config.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        let cluster = settings.cluster().expect("cluster mode");
        assert_eq!((cluster.node_id, cluster.zone.as_str()), (1, "a"));
        assert_eq!(cluster.peers.len(), 2);
        let single = ServeArgs::default().load().expect("valid");
        assert!(single.cluster().is_none());
    }

    #[test]
    fn allowed_hosts_and_origins_are_toml_arrays_or_comma_separated_text() {
        let config = file(
            "allowed_hosts = [\"Wharf.Internal.\", \"dev.test\"]\n\
             allowed_origins = \"https://app.example:443, http://localhost:3000\"\n",
        );
        let settings = ServeArgs {
            config: Some(config.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect("valid");
        assert_eq!(
            settings.edge().allowed_hosts,
            ["wharf.internal", "dev.test"]
        );
        assert_eq!(
            settings.edge().allowed_origins,
            ["https://app.example", "http://localhost:3000"]
        );
        let bad = file("allowed_origins = [\"null\"]\n");
        let error = ServeArgs {
            config: Some(bad.path().to_owned()),
            ..ServeArgs::default()
        }
        .load()
        .expect_err("null is not an origin to allow");
        assert!(error.to_string().contains("allowed_origins"), "{error}");
    }
}
