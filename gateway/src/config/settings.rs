//! [`Settings`]: the validated, frozen settings of one server, and the defaults of its own
//! (non-edge) settings.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use broker_core::{BrokerConfig, FsyncPolicy};

use super::alerts::AlertSettings;
use broker_core::history::RetentionMinutes;

use super::cluster::ClusterSettings;
use super::edge::EdgeSettings;
use super::error::ConfigError;
use super::raw::RawSettings;
use crate::auth::Authenticator;
use crate::governance::history::HistoryHooks;
use crate::governance::probe::ProbeHooks;

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
/// Default `trace_index`: on, so a message can be looked up and its deliveries followed
/// without asking for it first; a deployment that measures the cost too high turns it off.
pub const DEFAULT_TRACE_INDEX: bool = true;
/// Default `history`: on, so the console and `/v1/stats/history` show the last week at once.
pub const DEFAULT_HISTORY: bool = true;

/// Validated, frozen settings of one server.
#[derive(Debug, Clone)]
pub struct Settings {
    pub(super) listen: SocketAddr,
    pub(super) data_dir: PathBuf,
    pub(super) fsync: FsyncPolicy,
    pub(super) segment_bytes: u64,
    pub(super) max_body_bytes: usize,
    pub(super) min_free_bytes: u64,
    pub(super) auth: Authenticator,
    pub(super) edge: EdgeSettings,
    pub(super) cluster: Option<ClusterSettings>,
    pub(super) alerts: AlertSettings,
    pub(super) history_retention: RetentionMinutes,
    pub(super) history_hooks: Option<HistoryHooks>,
    pub(super) probe_interval_ms: u64,
    pub(super) probe_hooks: Option<ProbeHooks>,
    pub(super) trace_index: bool,
    pub(super) history: bool,
}

impl Settings {
    /// Token verification (disabled when no key is configured).
    pub fn auth(&self) -> &Authenticator {
        &self.auth
    }

    /// Cluster membership; `None` on a single node.
    pub fn cluster(&self) -> Option<&ClusterSettings> {
        self.cluster.as_ref()
    }

    /// Alert webhooks and evaluation.
    pub fn alerts(&self) -> &AlertSettings {
        &self.alerts
    }

    /// The edge's limits, timeouts and switches.
    pub fn edge(&self) -> &EdgeSettings {
        &self.edge
    }

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

    /// Produces are refused (507) while less than this many bytes are free on the data
    /// folder's file system (0: never).
    pub fn min_free_bytes(&self) -> u64 {
        self.min_free_bytes
    }

    /// Minutes of per-minute history kept per topic and subscription.
    pub fn history_retention(&self) -> RetentionMinutes {
        self.history_retention
    }

    /// The history's test hooks, if a test set them.
    pub fn history_hooks(&self) -> Option<&HistoryHooks> {
        self.history_hooks.as_ref()
    }

    /// Time between two synthetic probe rounds, in ms; 0: no probe.
    pub fn probe_interval_ms(&self) -> u64 {
        self.probe_interval_ms
    }

    /// The probe's test fault, if a test set it.
    pub fn probe_hooks(&self) -> Option<&ProbeHooks> {
        self.probe_hooks.as_ref()
    }

    /// Whether the message trace is kept (`trace_index`): off, the broker indexes nothing
    /// for lookups by id or key and records no first deliveries, and the lookup routes
    /// answer 501 `trace_disabled`.
    pub fn trace_index(&self) -> bool {
        self.trace_index
    }

    /// Whether the per-minute history is kept (`history`): off, nothing samples or records
    /// it, and `/v1/stats/history` and `/v1/stats/top` answer 501 `history_disabled` (the
    /// produce error count the alerts read goes on).
    pub fn history(&self) -> bool {
        self.history
    }

    /// The broker's configuration.
    pub fn broker_config(&self) -> BrokerConfig {
        let mut config = BrokerConfig::new(&self.data_dir);
        config.log.fsync = self.fsync;
        config.log.segment_bytes = self.segment_bytes;
        config.min_free_bytes = self.min_free_bytes;
        config.trace_index = self.trace_index;
        config
    }
}
