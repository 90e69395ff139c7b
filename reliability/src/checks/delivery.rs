//! Delivered after ack confirmed: a delivery of a value in a subscription received after an `ok`
//! ack of that value in that subscription had completed.

use std::collections::HashMap;

use serde::Serialize;

use crate::event::{NodeId, Outcome};
use crate::history::History;
use crate::offenders::Offenders;

/// A delivery that came after its message's ack was confirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LateDelivery {
    /// The value.
    pub value: String,
    /// The subscription.
    pub subscription: String,
    /// The delivery's attempt number.
    pub attempt: u32,
    /// The node that delivered it.
    pub node: NodeId,
    /// When it was received.
    pub received_ms: u64,
    /// When the first `ok` ack of the value in the subscription completed.
    pub ack_confirmed_ms: u64,
}

/// Every delivery received after an `ok` ack of its value in its subscription completed.
pub fn check(history: &History) -> Offenders<LateDelivery> {
    let confirmed = first_confirmed_acks(history);
    history
        .deliveries
        .iter()
        .filter_map(|deliver| {
            let key = (deliver.subscription.as_str(), deliver.value.as_str());
            let &ack_confirmed_ms = confirmed.get(&key)?;
            (deliver.received_ms > ack_confirmed_ms).then(|| LateDelivery {
                value: deliver.value.clone(),
                subscription: deliver.subscription.clone(),
                attempt: deliver.attempt,
                node: deliver.node,
                received_ms: deliver.received_ms,
                ack_confirmed_ms,
            })
        })
        .collect()
}

/// When the first `ok` ack of each (subscription, value) completed.
fn first_confirmed_acks(history: &History) -> HashMap<(&str, &str), u64> {
    let mut confirmed: HashMap<(&str, &str), u64> = HashMap::new();
    for ack in history.acks.iter().filter(|ack| ack.outcome == Outcome::Ok) {
        let at = confirmed
            .entry((&ack.subscription, &ack.value))
            .or_insert(ack.complete_ms);
        *at = (*at).min(ack.complete_ms);
    }
    confirmed
}
