//! Topics' wire types: a topic to create or change, its rate limits, and a topic's settings
//! and stats.

use broker_core::topic::{PartitionInfo, RateLimit, TopicInfo};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::present;
use crate::json::object;

/// A topic to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTopicRequest {
    /// Name: `[A-Za-z0-9._-]{1,200}`, not starting with `__`, and not `.` or `..`.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = r"^([A-Za-z0-9-][A-Za-z0-9._-]*|_([A-Za-z0-9.-][A-Za-z0-9._-]*)?|\.[A-Za-z0-9_-][A-Za-z0-9._-]*|\.\.[A-Za-z0-9._-]+)$"
    )]
    pub name: String,
    /// Number of partitions, fixed at creation (default 1).
    #[schema(minimum = 1, maximum = 256)]
    pub partitions: Option<u32>,
    /// Delete whole segments whose newest message is older than this (at least 60000);
    /// absent keeps messages forever.
    #[schema(minimum = 60000, maximum = 9223372036854775807_u64)]
    pub retention_ms: Option<u64>,
    /// Delete the oldest segments while a partition is larger than this; absent: no cap.
    #[schema(minimum = 1, maximum = 9223372036854775807_u64)]
    pub retention_bytes: Option<u64>,
    /// Largest message value accepted, in bytes (default 1 MiB, at most 16 MiB).
    #[schema(minimum = 1, maximum = 16777216)]
    pub max_message_bytes: Option<usize>,
    /// Copies of each partition (a single node keeps 1).
    #[schema(minimum = 1, maximum = 1)]
    pub replication_factor: Option<u32>,
    /// Produce rate limits, counted per message and per value byte (default: none).
    #[serde(default, deserialize_with = "object::optional")]
    pub rate_limit: Option<RateLimitBody>,
    /// How long a client message `id` is remembered for deduplication, 0 to 604800000
    /// milliseconds (7 days; default 600000, 10 minutes; 0 turns deduplication off).
    #[schema(minimum = 0, maximum = 604800000)]
    pub dedup_window_ms: Option<u64>,
}

/// A topic's produce rate limits; an absent field is no limit. Over a limit, produces get
/// 429 `rate_limited` with `Retry-After`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimitBody {
    /// Messages per second (a batch of n counts n).
    #[schema(minimum = 1, maximum = 2147483647)]
    pub messages_per_second: Option<u32>,
    /// Message value bytes per second.
    #[schema(minimum = 1, maximum = 9223372036854775807_u64)]
    pub bytes_per_second: Option<u64>,
}

impl From<RateLimitBody> for RateLimit {
    fn from(body: RateLimitBody) -> Self {
        RateLimit {
            messages_per_second: body.messages_per_second,
            bytes_per_second: body.bytes_per_second,
        }
    }
}

impl From<RateLimit> for RateLimitBody {
    fn from(limit: RateLimit) -> Self {
        RateLimitBody {
            messages_per_second: limit.messages_per_second,
            bytes_per_second: limit.bytes_per_second,
        }
    }
}

/// A change to a topic's settings; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchTopicRequest {
    /// New retention by age; `null` keeps messages forever.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 60000, maximum = 9223372036854775807_u64)]
    pub retention_ms: Option<Option<u64>>,
    /// New retention by size; `null` removes the cap.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 9223372036854775807_u64)]
    pub retention_bytes: Option<Option<u64>>,
    /// New largest message value, in bytes.
    #[schema(minimum = 1, maximum = 16777216)]
    pub max_message_bytes: Option<usize>,
    /// New rate limits, replacing the old ones whole (`{}` removes every limit).
    #[serde(default, deserialize_with = "object::optional")]
    pub rate_limit: Option<RateLimitBody>,
    /// New deduplication window for client message ids, 0 to 604800000 milliseconds.
    #[schema(minimum = 0, maximum = 604800000)]
    pub dedup_window_ms: Option<u64>,
}

/// One partition's stats.
#[derive(Debug, Serialize, ToSchema)]
pub struct PartitionStats {
    /// Partition number.
    pub partition: u32,
    /// First offset still stored.
    pub start_offset: u64,
    /// Offset the next message will get.
    pub end_offset: u64,
    /// Bytes on disk.
    pub bytes: u64,
    /// Node that leads the partition.
    pub leader: String,
}

/// A topic's settings and stats.
#[derive(Debug, Serialize, ToSchema)]
pub struct Topic {
    /// Name.
    pub name: String,
    /// Number of partitions.
    pub partitions: u32,
    /// Retention by age, in milliseconds; `null`: forever.
    pub retention_ms: Option<u64>,
    /// Retention by size per partition, in bytes; `null`: no cap.
    pub retention_bytes: Option<u64>,
    /// Largest message value accepted, in bytes.
    pub max_message_bytes: usize,
    /// Copies of each partition.
    pub replication_factor: u32,
    /// Produce rate limits.
    pub rate_limit: RateLimitBody,
    /// How long a client message `id` is remembered for deduplication, in milliseconds.
    pub dedup_window_ms: u64,
    /// Creation time, Unix epoch milliseconds.
    pub created_ms: u64,
    /// Number of subscriptions on the topic.
    pub subscriptions: usize,
    /// Delayed messages on the topic's schedule, not yet due.
    pub delayed: u64,
    /// Per partition, in partition order: offsets, size and leader.
    pub partition_stats: Vec<PartitionStats>,
}

/// All topics.
#[derive(Debug, Serialize, ToSchema)]
pub struct TopicList {
    /// The topics, by name.
    pub topics: Vec<Topic>,
}

impl From<PartitionInfo> for PartitionStats {
    fn from(info: PartitionInfo) -> Self {
        PartitionStats {
            partition: info.partition,
            start_offset: info.start_offset,
            end_offset: info.end_offset,
            bytes: info.bytes,
            leader: info.leader,
        }
    }
}

impl From<TopicInfo> for Topic {
    fn from(info: TopicInfo) -> Self {
        let config = info.config;
        Topic {
            name: config.name,
            partitions: config.partitions,
            retention_ms: config.retention_ms,
            retention_bytes: config.retention_bytes,
            max_message_bytes: config.max_message_bytes,
            replication_factor: config.replication_factor,
            rate_limit: config.rate_limit.into(),
            dedup_window_ms: config.dedup_window_ms,
            created_ms: config.created_ms,
            subscriptions: info.subscriptions,
            delayed: info.delayed,
            partition_stats: info.partitions.into_iter().map(Into::into).collect(),
        }
    }
}
