//! Delivered after ack confirmed: a delivery of a value in a subscription after an `ok` ack of
//! that value in that subscription had completed.
//!
//! A delivery counts as late when its receive was sent after the ack was confirmed: the node
//! then served it knowing the ack. One whose receive was already in flight when the ack was
//! confirmed, and came back after, is counted apart ([`DeliveriesAfterAck::in_flight`]): the
//! node may have leased the message before it applied the ack (a new leader that never learnt
//! an old leader's lease), which at-least-once allows. A delivery whose history does not record
//! when its receive was sent is judged by when it arrived.

use std::collections::HashMap;

use serde::Serialize;

use crate::event::{Deliver, NodeId, Outcome};
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
    /// When its receive was sent, if the history recorded it.
    pub receive_invoke_ms: Option<u64>,
    /// When it was received.
    pub received_ms: u64,
    /// When the first `ok` ack of the value in the subscription completed.
    pub ack_confirmed_ms: u64,
}

/// Deliveries that arrived after their ack was confirmed, split by when their receive was sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeliveriesAfterAck {
    /// Receive sent after the ack was confirmed: a violation.
    pub late: Offenders<LateDelivery>,
    /// Receive sent before the ack was confirmed, reply after it: allowed, reported.
    pub in_flight: Offenders<LateDelivery>,
}

/// Every delivery received after an `ok` ack of its value in its subscription completed.
pub fn check(history: &History) -> DeliveriesAfterAck {
    let confirmed = first_confirmed_acks(history);
    let mut found = DeliveriesAfterAck::default();
    for deliver in &history.deliveries {
        let key = (deliver.subscription.as_str(), deliver.value.as_str());
        let Some(&ack_confirmed_ms) = confirmed.get(&key) else {
            continue;
        };
        if deliver.received_ms <= ack_confirmed_ms {
            continue;
        }
        let sent_ms = deliver.receive_invoke_ms.unwrap_or(deliver.received_ms);
        let late = late_delivery(deliver, ack_confirmed_ms);
        if sent_ms > ack_confirmed_ms {
            found.late.push(late);
        } else {
            found.in_flight.push(late);
        }
    }
    found
}

fn late_delivery(deliver: &Deliver, ack_confirmed_ms: u64) -> LateDelivery {
    LateDelivery {
        value: deliver.value.clone(),
        subscription: deliver.subscription.clone(),
        attempt: deliver.attempt,
        node: deliver.node,
        receive_invoke_ms: deliver.receive_invoke_ms,
        received_ms: deliver.received_ms,
        ack_confirmed_ms,
    }
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
