//! Consumption: for each subscription the run consumed through to the end
//! ([`Run::consumed_through`](crate::event::Run::consumed_through)), the acknowledged values
//! never delivered, and how often values were delivered more than once.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::event::{Offset, Outcome, Partition};
use crate::history::History;
use crate::index::acked_produces;
use crate::offenders::Offenders;

/// What consumers got through the subscriptions a run consumed through.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Consumption {
    /// The subscriptions counted (the run header's `consumed_through`).
    pub subscriptions: Vec<String>,
    /// Deliveries in those subscriptions.
    pub deliveries: u64,
    /// Distinct (subscription, value) pairs delivered.
    pub distinct: u64,
    /// Distinct (subscription, value) pairs with an `ok` ack.
    pub acked: u64,
    /// (subscription, acknowledged value) pairs never delivered: an anomaly.
    pub undelivered: Offenders<Undelivered>,
    /// (subscription, value) pairs delivered more than once. At-least-once allows them.
    pub redelivered: u64,
    /// `redelivered` over `distinct` (0 when nothing was delivered).
    pub redelivered_rate: f64,
    /// Deliveries whose attempt number was not above an earlier delivery's of the same value:
    /// the node serving it had not learnt of the earlier one (a lease recorded without waiting,
    /// lost with its leader, or served by a deposed leader). At-least-once allows them.
    pub attempt_not_raised: u64,
}

/// An acknowledged value a subscription never delivered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undelivered {
    /// The subscription.
    pub subscription: String,
    /// The value.
    pub value: String,
    /// The partition its ok reply named, if any.
    pub partition: Option<Partition>,
    /// The offset its ok reply named, if any.
    pub offset: Option<Offset>,
}

/// Counts what `history`'s consumers got through its `consumed_through` subscriptions.
pub fn check(history: &History) -> Consumption {
    let Some(run) = &history.run else {
        return Consumption::default();
    };
    let wanted: HashSet<&str> = run.consumed_through.iter().map(String::as_str).collect();
    let mut times: HashMap<(&str, &str), u64> = HashMap::new();
    let mut highest_attempt: HashMap<(&str, &str), u32> = HashMap::new();
    let mut deliveries = 0;
    let mut attempt_not_raised = 0;
    for deliver in &history.deliveries {
        if wanted.contains(deliver.subscription.as_str()) {
            deliveries += 1;
            let key = (deliver.subscription.as_str(), deliver.value.as_str());
            *times.entry(key).or_default() += 1;
            match highest_attempt.get_mut(&key) {
                Some(highest) if deliver.attempt <= *highest => attempt_not_raised += 1,
                Some(highest) => *highest = deliver.attempt,
                None => {
                    highest_attempt.insert(key, deliver.attempt);
                }
            }
        }
    }
    let acked: HashSet<(&str, &str)> = history
        .acks
        .iter()
        .filter(|ack| ack.outcome == Outcome::Ok && wanted.contains(ack.subscription.as_str()))
        .map(|ack| (ack.subscription.as_str(), ack.value.as_str()))
        .collect();
    let mut undelivered = Offenders::default();
    for subscription in &run.consumed_through {
        for produce in acked_produces(history) {
            if !times.contains_key(&(subscription.as_str(), produce.value.as_str())) {
                undelivered.push(Undelivered {
                    subscription: subscription.clone(),
                    value: produce.value.clone(),
                    partition: produce.partition,
                    offset: produce.offset,
                });
            }
        }
    }
    let distinct = times.len() as u64;
    let redelivered = times.values().filter(|&&n| n > 1).count() as u64;
    Consumption {
        subscriptions: run.consumed_through.clone(),
        deliveries,
        distinct,
        acked: acked.len() as u64,
        undelivered,
        redelivered,
        redelivered_rate: if distinct == 0 {
            0.0
        } else {
            redelivered as f64 / distinct as f64
        },
        attempt_not_raised,
    }
}
