//! The checks: pure functions over a parsed [`History`](crate::history::History), one concept
//! per module.
//!
//! - [`queue`]: total-queue counts (attempted, acknowledged, lost, unexpected, duplicated…).
//! - [`lost`]: where lost values were lost: prefix, middle or postfix of the log.
//! - [`log`]: each node's log alone: one value per offset, increasing offsets, no holes.
//! - [`divergence`]: replicas holding different values at one offset.
//! - [`offset_mismatch`]: an acknowledged position holding another value.
//! - [`deposed`]: acks a paused node gave after it resumed that the drained logs do not back.
//! - [`delivery`]: deliveries after their ack was confirmed.
//! - [`consumption`]: acknowledged values never delivered, and values delivered more than once.
//! - [`backlog`]: the acknowledged values not yet delivered when the producers stopped, and how
//!   long each took to come.
//! - [`idempotence`]: ids stored twice when the run promised once, retries, duplicate replies.
//! - [`order`]: per-key order of each producer's acknowledged writes.
//! - [`leaders`]: leader changes, and two leaders in one term.
//! - [`coverage`]: whether the run did what it set out to do.
//! - [`unavailability`]: how long writes could not be acknowledged.
//! - [`server_errors`]: 5xx replies other than 503 and 507.

pub mod backlog;
pub mod consumption;
pub mod coverage;
pub mod delivery;
pub mod deposed;
pub mod divergence;
pub mod idempotence;
pub mod leaders;
pub mod log;
pub mod lost;
pub mod offset_mismatch;
pub mod order;
pub mod queue;
pub mod server_errors;
pub mod unavailability;
