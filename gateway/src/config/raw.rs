//! [`RawSettings`]: every setting still optional text, and [`RawSettings::freeze`], which fills
//! in defaults, validates each value and the relations between them.

use std::net::SocketAddr;
use std::path::PathBuf;

use broker_core::FsyncPolicy;
use broker_core::config::{DEFAULT_SEGMENT_BYTES, MIN_SEGMENT_BYTES};
use broker_core::disk_space::DEFAULT_MIN_FREE_BYTES;
use broker_core::history::RetentionMinutes;
use broker_core::history::retention::{MAX_RETENTION_MINUTES, MIN_RETENTION_MINUTES};
use broker_core::limits::MAX_FRAME_BYTES;

use super::alerts::{AlertRaw, freeze_alerts};
use super::cluster::{ClusterArgs, freeze_cluster};
use super::edge::freeze_edge;
use super::edge_args::EdgeRaw;
use super::error::{ConfigError, invalid};
use super::probe::freeze_probe_interval;
use super::settings::{
    DEFAULT_DATA_DIR, DEFAULT_FSYNC, DEFAULT_HISTORY, DEFAULT_LISTEN, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_TRACE_INDEX, MIN_MAX_BODY_BYTES, Settings,
};
use super::values::{boolean, parse_number};
use crate::auth::KeySpec;
use crate::governance::history::HistoryHooks;
use crate::governance::probe::ProbeHooks;

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
    /// See [`Settings::min_free_bytes`].
    pub min_free_bytes: Option<String>,
    /// See [`Settings::history_retention`].
    pub history_retention_minutes: Option<String>,
    /// See [`Settings::history_hooks`] (tests only; no flag or key sets it).
    pub history_hooks: Option<HistoryHooks>,
    /// See [`Settings::probe_interval_ms`].
    pub probe_interval_ms: Option<String>,
    /// See [`Settings::probe_hooks`] (tests only; no flag or key sets it).
    pub probe_hooks: Option<ProbeHooks>,
    /// See [`Settings::trace_index`].
    pub trace_index: Option<String>,
    /// See [`Settings::history`].
    pub history: Option<String>,
    /// Serve without auth on a non-loopback address.
    pub allow_anonymous: bool,
    /// Keys from the config file's `[[auth_keys]]`.
    pub auth_keys: Vec<KeySpec>,
    /// Auth, limits and timeouts, as text.
    pub edge: EdgeRaw,
    /// Cluster membership, as text.
    pub cluster: ClusterArgs,
    /// Alert webhooks and evaluation, as text.
    pub alerts: AlertRaw,
}

impl RawSettings {
    /// Fills in defaults, parses and validates every value and their relations.
    pub fn freeze(self) -> Result<Settings, ConfigError> {
        let listen_text = self.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
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
        let min_free_bytes = match self.min_free_bytes {
            Some(text) => parse_number::<u64>("min_free_bytes", &text)?,
            None => DEFAULT_MIN_FREE_BYTES,
        };
        let history_retention = match self.history_retention_minutes {
            Some(text) => {
                let minutes = parse_number::<u64>("history_retention_minutes", &text)?;
                RetentionMinutes::new(minutes).map_err(|_| {
                    invalid(
                        "history_retention_minutes",
                        &minutes.to_string(),
                        format!("must be {MIN_RETENTION_MINUTES} to {MAX_RETENTION_MINUTES}"),
                    )
                })?
            }
            None => RetentionMinutes::default(),
        };
        let (auth, mut edge) = freeze_edge(self.edge, self.auth_keys)?;
        if !auth.enabled() && !listen.ip().is_loopback() && !self.allow_anonymous {
            return Err(ConfigError::AnonymousOnNetwork { listen });
        }
        edge.check_host = listen.ip().is_loopback() || !edge.allowed_hosts.is_empty();
        let cluster = freeze_cluster(self.cluster, listen)?;
        let alerts = freeze_alerts(self.alerts)?;
        let probe_interval_ms = freeze_probe_interval(self.probe_interval_ms)?;
        let trace_index = boolean("trace_index", self.trace_index, DEFAULT_TRACE_INDEX)?;
        let history = boolean("history", self.history, DEFAULT_HISTORY)?;
        Ok(Settings {
            trace_index,
            history,
            probe_interval_ms,
            probe_hooks: self.probe_hooks,
            alerts,
            listen,
            data_dir,
            fsync,
            segment_bytes,
            max_body_bytes,
            min_free_bytes,
            auth,
            edge,
            cluster,
            history_retention,
            history_hooks: self.history_hooks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_loopback_fsync_always_and_eight_mebibyte_bodies() {
        let settings = RawSettings::default().freeze().expect("defaults are valid");
        assert_eq!(settings.listen().to_string(), DEFAULT_LISTEN);
        assert_eq!(settings.fsync(), FsyncPolicy::Always);
        assert_eq!(settings.max_body_bytes(), 8 * 1024 * 1024);
        assert_eq!(settings.segment_bytes(), DEFAULT_SEGMENT_BYTES);
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
    fn history_retention_defaults_to_a_week_and_is_checked_on_both_sides() {
        let with = |minutes: Option<&str>| {
            RawSettings {
                history_retention_minutes: minutes.map(str::to_owned),
                ..RawSettings::default()
            }
            .freeze()
        };
        let default = with(None).expect("valid");
        assert_eq!(default.history_retention().get(), 10_080);
        assert_eq!(
            with(Some("60")).expect("valid").history_retention().get(),
            60
        );
        assert!(with(Some("59")).is_err());
        assert!(with(Some("44641")).is_err());
        let error = with(Some("7")).expect_err("too few");
        assert!(
            error.to_string().contains("history_retention_minutes"),
            "{error}"
        );
    }

    #[test]
    fn trace_index_and_history_take_booleans_and_name_themselves_when_refused() {
        let with = |trace_index: &str, history: &str| {
            RawSettings {
                trace_index: Some(trace_index.to_owned()),
                history: Some(history.to_owned()),
                ..RawSettings::default()
            }
            .freeze()
        };
        let off = with("false", "off").expect("valid");
        assert!(!off.trace_index() && !off.history());
        let on = with("true", "1").expect("valid");
        assert!(on.trace_index() && on.history());
        let error = with("maybe", "true").expect_err("not a boolean");
        assert!(error.to_string().contains("trace_index"), "{error}");
        let error = with("true", "sometimes").expect_err("not a boolean");
        assert!(error.to_string().contains("history"), "{error}");
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
    fn no_keys_on_a_network_address_refuses_to_start_unless_anonymous_is_allowed() {
        let public = |allow_anonymous| {
            RawSettings {
                listen: Some("0.0.0.0:8080".into()),
                allow_anonymous,
                ..RawSettings::default()
            }
            .freeze()
        };
        let error = public(false).expect_err("refused");
        assert!(error.to_string().contains("--allow-anonymous"), "{error}");
        assert!(public(true).is_ok());
        let with_key = RawSettings {
            listen: Some("0.0.0.0:8080".into()),
            edge: EdgeRaw {
                auth_hs256_secret: Some("k".repeat(40)),
                ..EdgeRaw::default()
            },
            ..RawSettings::default()
        };
        assert!(with_key.freeze().is_ok());
    }

    #[test]
    fn an_anonymous_network_server_checks_host_only_once_allowed_hosts_is_given() {
        let anonymous = |listen: &str, hosts: Option<&str>| {
            RawSettings {
                listen: Some(listen.into()),
                allow_anonymous: true,
                edge: EdgeRaw {
                    allowed_hosts: hosts.map(str::to_owned),
                    ..EdgeRaw::default()
                },
                ..RawSettings::default()
            }
            .freeze()
            .expect("valid")
            .edge()
            .check_host
        };
        assert!(anonymous("127.0.0.1:8080", None));
        assert!(anonymous("[::1]:8080", None));
        assert!(!anonymous("0.0.0.0:8080", None));
        assert!(anonymous("0.0.0.0:8080", Some("wharf.internal")));
    }
}
