//! The backlog after the producers stop: with consumers run to the end
//! ([`Run::consumed_through`](crate::event::Run::consumed_through)), the idle phase starts at
//! the producers' last completion (the latest `complete_ms` of any produce). Every
//! acknowledged value not yet delivered through a subscription by then is its backlog; each
//! one's wait is from the idle start to its first delivery. With
//! [`Run::idle_delivery_bound_ms`](crate::event::Run::idle_delivery_bound_ms), one delivered
//! later than the bound, or never, is stalled: an anomaly (a partition whose consumers are
//! stuck though nothing else is produced).

use std::collections::HashMap;

use serde::Serialize;

use crate::event::{Offset, Partition};
use crate::history::History;
use crate::index::acked_produces;
use crate::offenders::Offenders;

/// The backlog at the idle start and how long it took to come.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Backlog {
    /// The run header's bound, if it sets one: only then are stalled values an anomaly.
    pub bound_ms: Option<u64>,
    /// When the idle phase started: the producers' last completion.
    pub idle_from_ms: u64,
    /// (subscription, acknowledged value) pairs not delivered by then.
    pub at_idle: u64,
    /// The longest wait, idle start to first delivery, of those delivered after it.
    pub longest_wait_ms: u64,
    /// Of the backlog, those delivered later than the bound after the idle start, or never
    /// (with a bound); without a bound, those never delivered.
    pub stalled: Offenders<Stalled>,
}

/// An acknowledged value its subscription delivered late in the idle phase, or never.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stalled {
    /// The subscription.
    pub subscription: String,
    /// The value.
    pub value: String,
    /// The partition its `ok` reply named, if any.
    pub partition: Option<Partition>,
    /// The offset its `ok` reply named, if any.
    pub offset: Option<Offset>,
    /// How long after the idle start it was first delivered; `None`: never.
    pub waited_ms: Option<u64>,
}

/// Measures `history`'s backlog at the idle start.
pub fn check(history: &History) -> Backlog {
    let Some(run) = &history.run else {
        return Backlog::default();
    };
    let bound_ms = run.idle_delivery_bound_ms;
    let idle_from_ms = history
        .produces
        .iter()
        .map(|p| p.complete_ms)
        .max()
        .unwrap_or(0);
    let mut first: HashMap<(&str, &str), u64> = HashMap::new();
    for deliver in &history.deliveries {
        let at = first
            .entry((deliver.subscription.as_str(), deliver.value.as_str()))
            .or_insert(deliver.received_ms);
        *at = (*at).min(deliver.received_ms);
    }
    let mut backlog = Backlog {
        bound_ms,
        idle_from_ms,
        ..Backlog::default()
    };
    for subscription in &run.consumed_through {
        for produce in acked_produces(history) {
            let delivered = first
                .get(&(subscription.as_str(), produce.value.as_str()))
                .copied();
            if delivered.is_some_and(|at| at <= idle_from_ms) {
                continue;
            }
            backlog.at_idle += 1;
            let waited_ms = delivered.map(|at| at - idle_from_ms);
            if let Some(waited) = waited_ms {
                backlog.longest_wait_ms = backlog.longest_wait_ms.max(waited);
            }
            let late = match (waited_ms, bound_ms) {
                (None, _) => true,
                (Some(waited), Some(bound)) => waited > bound,
                (Some(_), None) => false,
            };
            if late {
                backlog.stalled.push(Stalled {
                    subscription: subscription.clone(),
                    value: produce.value.clone(),
                    partition: produce.partition,
                    offset: produce.offset,
                    waited_ms,
                });
            }
        }
    }
    backlog
}

impl Backlog {
    /// Stalled values, when the run header sets a bound: the count the verdict judges (values
    /// never delivered without a bound are already `undelivered`).
    pub fn anomalies(&self) -> u64 {
        if self.bound_ms.is_some() {
            self.stalled.count
        } else {
            0
        }
    }
}
