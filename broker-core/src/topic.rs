//! Topics: what a producer may set, what is stored, and what a describe returns.

use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::limits::{
    DEFAULT_MAX_MESSAGE_BYTES, MAX_INT32_SETTING, MAX_INT64_SETTING, MAX_MESSAGE_BYTES_CEILING,
    MAX_PARTITIONS, check_range,
};
use crate::names;

/// Copies of each partition when a create request does not say: three survive the loss of
/// any one node (or, spread over three zones, of one zone) with a Raft majority left.
pub const DEFAULT_REPLICATION_FACTOR: u32 = 3;

/// The replication factor of a topic created without one: [`DEFAULT_REPLICATION_FACTOR`]
/// when there are that many Active nodes, else one copy per node.
pub fn default_replication_factor(active_nodes: usize) -> u32 {
    u32::try_from(active_nodes).map_or(DEFAULT_REPLICATION_FACTOR, |n| {
        n.min(DEFAULT_REPLICATION_FACTOR)
    })
}

/// A topic's settings as stored in the metadata store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicConfig {
    /// The topic's name.
    pub name: String,
    /// Number of partitions, fixed at creation.
    pub partitions: u32,
    /// Delete whole segments whose newest message is older than this; `None` keeps forever.
    pub retention_ms: Option<u64>,
    /// Delete the oldest whole segments while a partition is larger than this; `None`: no cap.
    pub retention_bytes: Option<u64>,
    /// Largest message value accepted.
    pub max_message_bytes: usize,
    /// Copies of each partition wanted; a single node keeps one.
    pub replication_factor: u32,
    /// Creation time, Unix epoch milliseconds.
    pub created_ms: u64,
    /// Unique id of this incarnation of the topic: a topic deleted and created again under the
    /// same name gets new storage and invalidates old receipts.
    pub uid: u64,
    /// Produce rate limits; the gateway enforces them.
    #[serde(default)]
    pub rate_limit: RateLimit,
    /// How long a client-chosen message id is remembered for dedup, in milliseconds.
    #[serde(default = "default_dedup_window_ms")]
    pub dedup_window_ms: u64,
}

/// Default dedup window: 10 minutes (API.md), as SQS FIFO's.
pub const DEFAULT_DEDUP_WINDOW_MS: u64 = 10 * 60 * 1000;
/// Longest dedup window: 7 days; the index costs disk per id produced within the window.
pub const MAX_DEDUP_WINDOW_MS: u64 = 7 * 24 * 60 * 60 * 1000;

fn default_dedup_window_ms() -> u64 {
    DEFAULT_DEDUP_WINDOW_MS
}

/// A topic's produce rate limits, counted per message and per byte so batching does not
/// bypass them. `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RateLimit {
    /// Messages per second.
    pub messages_per_second: Option<u32>,
    /// Value bytes per second.
    pub bytes_per_second: Option<u64>,
}

/// What a create request may set; `None` takes the default.
#[derive(Debug, Clone, Default)]
pub struct TopicSpec {
    /// The topic's name.
    pub name: String,
    /// Number of partitions (default 1, at most [`MAX_PARTITIONS`]).
    pub partitions: Option<u32>,
    /// See [`TopicConfig::retention_ms`].
    pub retention_ms: Option<u64>,
    /// See [`TopicConfig::retention_bytes`].
    pub retention_bytes: Option<u64>,
    /// See [`TopicConfig::max_message_bytes`] (default 1 MiB, at most 16 MiB).
    pub max_message_bytes: Option<usize>,
    /// See [`TopicConfig::replication_factor`] (a single node accepts only 1; a cluster
    /// defaults to 3, or its node count if fewer, and accepts 1 to its node count).
    pub replication_factor: Option<u32>,
    /// See [`TopicConfig::rate_limit`].
    pub rate_limit: Option<RateLimit>,
    /// See [`TopicConfig::dedup_window_ms`] (default 10 minutes).
    pub dedup_window_ms: Option<u64>,
    /// One of the server's own topics: its name is checked by
    /// [`names::validate_internal`] instead of [`names::validate`]. Never set from a request.
    pub internal: bool,
}

/// A change to a topic's settings: `Some(None)` clears an optional limit.
#[derive(Debug, Clone, Default)]
pub struct TopicPatch {
    /// New retention by age.
    pub retention_ms: Option<Option<u64>>,
    /// New retention by size.
    pub retention_bytes: Option<Option<u64>>,
    /// New message size limit.
    pub max_message_bytes: Option<usize>,
    /// New rate limits (replacing the old ones whole).
    pub rate_limit: Option<RateLimit>,
    /// New dedup window.
    pub dedup_window_ms: Option<u64>,
}

/// Shortest retention by age accepted: one minute, so a typo cannot wipe a topic at once.
pub const MIN_RETENTION_MS: u64 = 60_000;

impl TopicSpec {
    /// Validates the spec and fills in defaults, on a single node (one copy of everything).
    pub fn into_config(self, created_ms: u64, uid: u64) -> Result<TopicConfig, BrokerError> {
        self.into_config_keeping(created_ms, uid, 1)
    }

    /// [`TopicSpec::into_config`] where `nodes` nodes may hold copies of a partition: 1 on a
    /// single node, which keeps one copy; in a cluster the Active nodes. The replication
    /// factor defaults to [`default_replication_factor`] (3, or `nodes` if
    /// fewer) and must be 1 to `nodes`.
    pub fn into_config_keeping(
        self,
        created_ms: u64,
        uid: u64,
        nodes: u32,
    ) -> Result<TopicConfig, BrokerError> {
        match self.internal {
            true => names::validate_internal("name", &self.name)?,
            false => names::validate("name", &self.name)?,
        }
        let partitions = check_range(
            "partitions",
            self.partitions.unwrap_or(1),
            1,
            MAX_PARTITIONS,
        )?;
        let default = default_replication_factor(nodes as usize);
        let replication_factor = self.replication_factor.unwrap_or(default);
        if !(1..=nodes.max(1)).contains(&replication_factor) {
            let reason = match nodes {
                0 | 1 => format!("a single node keeps 1 copy, got {replication_factor}"),
                n => format!(
                    "each partition keeps 1 to {n} copies (one per active node), got \
                     {replication_factor}"
                ),
            };
            return Err(BrokerError::invalid("replication_factor", reason));
        }
        let config = TopicConfig {
            name: self.name,
            partitions,
            retention_ms: None,
            retention_bytes: None,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            replication_factor,
            created_ms,
            uid,
            rate_limit: RateLimit::default(),
            dedup_window_ms: DEFAULT_DEDUP_WINDOW_MS,
        };
        config.patched(&TopicPatch {
            retention_ms: self.retention_ms.map(Some),
            retention_bytes: self.retention_bytes.map(Some),
            max_message_bytes: self.max_message_bytes,
            rate_limit: self.rate_limit,
            dedup_window_ms: self.dedup_window_ms,
        })
    }
}

impl TopicConfig {
    /// This config with a patch applied, validated.
    pub fn patched(&self, patch: &TopicPatch) -> Result<TopicConfig, BrokerError> {
        let mut next = self.clone();
        if let Some(retention_ms) = patch.retention_ms {
            if let Some(ms) = retention_ms.filter(|ms| *ms < MIN_RETENTION_MS) {
                return Err(BrokerError::invalid(
                    "retention_ms",
                    format!("must be at least {MIN_RETENTION_MS}, got {ms}"),
                ));
            }
            if let Some(ms) = retention_ms {
                check_range("retention_ms", ms, MIN_RETENTION_MS, MAX_INT64_SETTING)?;
            }
            next.retention_ms = retention_ms;
        }
        if let Some(retention_bytes) = patch.retention_bytes {
            if retention_bytes == Some(0) {
                return Err(BrokerError::invalid("retention_bytes", "must be positive"));
            }
            if let Some(bytes) = retention_bytes {
                check_range("retention_bytes", bytes, 1, MAX_INT64_SETTING)?;
            }
            next.retention_bytes = retention_bytes;
        }
        if let Some(max) = patch.max_message_bytes {
            next.max_message_bytes =
                check_range("max_message_bytes", max, 1, MAX_MESSAGE_BYTES_CEILING)?;
        }
        if let Some(limit) = patch.rate_limit {
            if limit.messages_per_second == Some(0) || limit.bytes_per_second == Some(0) {
                return Err(BrokerError::invalid(
                    "rate_limit",
                    "a rate limit must be positive (leave it out for no limit)",
                ));
            }
            if let Some(messages) = limit.messages_per_second {
                check_range(
                    "rate_limit.messages_per_second",
                    messages,
                    1,
                    MAX_INT32_SETTING,
                )?;
            }
            if let Some(bytes) = limit.bytes_per_second {
                check_range("rate_limit.bytes_per_second", bytes, 1, MAX_INT64_SETTING)?;
            }
            next.rate_limit = limit;
        }
        if let Some(window) = patch.dedup_window_ms {
            next.dedup_window_ms = check_range("dedup_window_ms", window, 0, MAX_DEDUP_WINDOW_MS)?;
        }
        Ok(next)
    }
}

/// Stats of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Partition number.
    pub partition: u32,
    /// First offset still stored.
    pub start_offset: u64,
    /// Offset the next message will get.
    pub end_offset: u64,
    /// Bytes on disk.
    pub bytes: u64,
    /// Node that leads the partition (this node's id on a single node).
    pub leader: String,
}

/// A topic's settings and partition stats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// Settings.
    pub config: TopicConfig,
    /// One entry per partition, in partition order.
    pub partitions: Vec<PartitionInfo>,
    /// Number of subscriptions on the topic.
    pub subscriptions: usize,
    /// Delayed messages on the topic's schedule, not yet due.
    pub delayed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> TopicSpec {
        TopicSpec {
            name: name.into(),
            ..TopicSpec::default()
        }
    }

    #[test]
    fn defaults_are_one_partition_and_one_mebibyte_messages() {
        let config = spec("orders").into_config(1, 2).expect("valid");
        assert_eq!(config.partitions, 1);
        assert_eq!(config.max_message_bytes, 1024 * 1024);
        assert_eq!(config.retention_ms, None);
    }

    #[test]
    fn partition_count_is_bounded_on_both_sides() {
        for (partitions, ok) in [
            (0, false),
            (1, true),
            (MAX_PARTITIONS, true),
            (MAX_PARTITIONS + 1, false),
        ] {
            let result = TopicSpec {
                partitions: Some(partitions),
                ..spec("t")
            }
            .into_config(0, 0);
            assert_eq!(result.is_ok(), ok, "partitions {partitions}");
        }
    }

    #[test]
    fn max_message_bytes_is_bounded_by_sixteen_mebibytes() {
        for (max, ok) in [
            (0, false),
            (MAX_MESSAGE_BYTES_CEILING, true),
            (MAX_MESSAGE_BYTES_CEILING + 1, false),
        ] {
            let result = TopicSpec {
                max_message_bytes: Some(max),
                ..spec("t")
            }
            .into_config(0, 0);
            assert_eq!(result.is_ok(), ok, "max_message_bytes {max}");
        }
    }

    #[test]
    fn a_patch_can_clear_retention() {
        let config = TopicSpec {
            retention_ms: Some(MIN_RETENTION_MS),
            ..spec("t")
        }
        .into_config(0, 0)
        .expect("valid");
        let cleared = config
            .patched(&TopicPatch {
                retention_ms: Some(None),
                ..TopicPatch::default()
            })
            .expect("valid");
        assert_eq!(cleared.retention_ms, None);
        assert!(
            config
                .patched(&TopicPatch {
                    retention_ms: Some(Some(MIN_RETENTION_MS - 1)),
                    ..TopicPatch::default()
                })
                .is_err()
        );
    }
}
