//! [`Findings`]: the result of every check over one history.

use serde::Serialize;

use crate::checks::backlog::{self, Backlog};
use crate::checks::consumption::{self, Consumption};
use crate::checks::coverage::{self, Coverage};
use crate::checks::delivery::{self, DeliveriesAfterAck};
use crate::checks::deposed::{self, DeposedAcks};
use crate::checks::divergence::{self, Divergence};
use crate::checks::idempotence::{self, Idempotence};
use crate::checks::leaders::{self, Leadership};
use crate::checks::log::{self, LogChecks};
use crate::checks::lost::{self, LostClasses};
use crate::checks::offset_mismatch::{self, OffsetMismatch};
use crate::checks::order::{self, OrderViolation};
use crate::checks::queue::{self, QueueCounts};
use crate::checks::server_errors::{self, ServerError};
use crate::checks::unavailability::{self, Unavailability};
use crate::history::History;
use crate::offenders::Offenders;

/// What every check found in one history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Findings {
    /// Total-queue counts.
    pub queue: QueueCounts,
    /// Where lost values were lost.
    pub lost: LostClasses,
    /// Each node's log on its own.
    pub log: LogChecks,
    /// Offsets at which replicas disagree.
    pub divergence: Offenders<Divergence>,
    /// Acknowledged positions holding another value.
    pub offset_mismatch: Offenders<OffsetMismatch>,
    /// Acks a paused node gave after it resumed, and those the drained logs do not back.
    pub deposed: DeposedAcks,
    /// Deliveries after their ack was confirmed.
    pub delivered_after_ack: DeliveriesAfterAck,
    /// What consumers got through the subscriptions the run consumed through.
    pub consumption: Consumption,
    /// The backlog when the producers stopped, and how long it took to be delivered.
    pub backlog: Backlog,
    /// Ids stored twice, retried values and duplicate replies.
    pub idempotence: Idempotence,
    /// Per-key order violations.
    pub order: Offenders<OrderViolation>,
    /// Leader changes and dual leaders.
    pub leadership: Leadership,
    /// What the run covered.
    pub coverage: Coverage,
    /// How long writes could not be acknowledged.
    pub unavailability: Unavailability,
    /// 5xx replies other than 503 and 507.
    pub server_errors: Offenders<ServerError>,
}

impl Findings {
    /// Runs every check over `history`.
    pub fn of(history: &History) -> Self {
        let leadership = leaders::check(history);
        Self {
            queue: queue::count(history),
            lost: lost::classify(history),
            log: log::check(history),
            divergence: divergence::check(history),
            offset_mismatch: offset_mismatch::check(history),
            deposed: deposed::check(history),
            delivered_after_ack: delivery::check(history),
            consumption: consumption::check(history),
            backlog: backlog::check(history),
            idempotence: idempotence::check(history),
            order: order::check(history),
            coverage: coverage::check(history, &leadership),
            leadership,
            unavailability: unavailability::check(history),
            server_errors: server_errors::check(history),
        }
    }
}
