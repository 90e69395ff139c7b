//! Per-minute history (issue 12): the figures of each topic and subscription, one record per
//! wall minute, kept for a bounded number of minutes, and the rankings computed from them.
//! This module is the pure core: no clock reads, no I/O, no routes; the server samples the
//! broker's counters and wires it.
//!
//! It lives in the broker, not the gateway, because it needs only the broker's counters and
//! gauges and no HTTP type, and because its record encoding is for a file layer that will sit
//! beside the broker's other files.
//!
//! # Time
//! Every `now_ms` is the broker's steady clock ([`crate::clock::steady_ms`]): Unix epoch ms that
//! never go back while the node runs, so minute `m` is `[m × 60 000, (m + 1) × 60 000)` ms of
//! wall time as the node saw it at start, and minute numbers only grow.
//!
//! # Layout
//! - [`record`]: [`MinuteRecord`], one minute of one series ([`TopicMinute`],
//!   [`SubscriptionMinute`]) and the figures it holds ([`TopicCounter`], [`SubscriptionCounter`],
//!   [`SubscriptionGauge`], [`TopicGauge`]).
//! - [`aggregator`]: [`MinuteAggregator`], samples of cumulative counters and gauges taken at
//!   any time into one record per minute.
//! - [`retention`]: [`RetentionMinutes`], how many minutes a series keeps, within its bounds.
//! - [`ring`]: [`MinuteRing`], the bounded store of a series' records, indexed by minute, and
//!   its range query; its rustdoc states what history costs in memory.
//! - [`encoding`]: the fixed-size, checksummed byte form of a record, for the file layer.
//! - [`ranking`]: [`top`], the series ranked by backlog, produced or consumed messages.
//! - [`error`]: [`HistoryError`], the module's one error.

pub mod aggregator;
pub mod encoding;
pub mod error;
pub mod ranking;
pub mod record;
pub mod retention;
pub mod ring;

pub use aggregator::{MinuteAggregator, SubscriptionAggregator, TopicAggregator};
pub use error::HistoryError;
pub use ranking::{RankBy, Rankable, Ranked, RankingQuery, top};
pub use record::{
    GaugeMinute, MinuteRecord, SubscriptionCounter, SubscriptionGauge, SubscriptionMinute,
    TopicCounter, TopicGauge, TopicMinute,
};
pub use retention::RetentionMinutes;
pub use ring::{MinuteRing, SubscriptionRing, TopicRing};

/// Milliseconds in a minute: minute `m` holds the samples taken at `m × MS_PER_MINUTE` ms up to,
/// not including, `(m + 1) × MS_PER_MINUTE` ms.
pub const MS_PER_MINUTE: u64 = 60_000;

/// The largest minute number there is: the minute of `u64::MAX` ms. A record naming a later
/// minute can only come from a corrupt file, and the number above it marks an empty slot of
/// a [`MinuteRing`].
pub const MAX_MINUTE: u64 = u64::MAX / MS_PER_MINUTE;

/// The minute that steady `now_ms` falls in.
pub const fn minute_of(now_ms: u64) -> u64 {
    now_ms / MS_PER_MINUTE
}
