//! [`AlertEventBody`]: the JSON a webhook receives for each firing and resolved event, and
//! the bytes that are signed ([`super::signature`]).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::evaluation::AlertEvent;
use super::rule::{AlertKind, ValidRule};

/// Whether an event opens or closes an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventState {
    /// The condition has held for the rule's `for_ms`.
    Firing,
    /// A firing alert ended: the condition no longer holds, or the rule was changed or
    /// deleted.
    Resolved,
}

/// The body of a webhook post, for example
/// `{"rule":"orders-backlog","kind":"backlog","state":"firing","value":1500.0,
/// "threshold":1000.0,"topic":"orders","subscription":"billing","since_ms":1764683000000,
/// "fired_at_ms":1764683060000,"at_ms":1764683060000,"node":2}`.
///
/// Times are Unix epoch milliseconds, read on the node's steady clock (the wall clock as read
/// when the node started, advanced by the monotonic clock since; see
/// [`broker_core::clock::steady_ms`]): they may differ from the wall clock by the steps the
/// system clock took since the node started, never by a jump backwards.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
pub struct AlertEventBody {
    /// The rule's name.
    pub rule: String,
    /// The rule's kind.
    pub kind: AlertKind,
    /// `firing` or `resolved`.
    pub state: EventState,
    /// The kind's measure at the transition (for `consumer_offline`, the backlog; for
    /// `probe`, the probe's failures in a row; for a rule changed or deleted, the last value
    /// sampled).
    pub value: f64,
    /// The rule's threshold (`null` for `consumer_offline` and `probe`).
    pub threshold: Option<f64>,
    /// The rule's topic, if it has one.
    pub topic: Option<String>,
    /// The rule's subscription, if it has one.
    pub subscription: Option<String>,
    /// When the condition began to hold.
    pub since_ms: u64,
    /// When the alert fired (equal to `at_ms` in a firing event).
    pub fired_at_ms: u64,
    /// When this event happened.
    pub at_ms: u64,
    /// The cluster node id of the node that evaluated the rule (`null` on a single node).
    pub node: Option<u64>,
}

impl AlertEventBody {
    /// The body of `event`, which `rule` emitted on `node`.
    pub fn new(rule: &ValidRule, event: &AlertEvent, node: Option<u64>) -> Self {
        debug_assert_eq!(event.rule(), rule.name(), "an event goes with its rule");
        let (state, value, since_ms, fired_at_ms, at_ms) = match *event {
            AlertEvent::Firing {
                value,
                since_ms,
                at_ms,
                ..
            } => (EventState::Firing, value, since_ms, at_ms, at_ms),
            AlertEvent::Resolved {
                value,
                since_ms,
                fired_at_ms,
                at_ms,
                ..
            } => (EventState::Resolved, value, since_ms, fired_at_ms, at_ms),
        };
        let given = rule.rule();
        AlertEventBody {
            rule: given.name.clone(),
            kind: given.kind,
            state,
            value,
            threshold: given.threshold,
            topic: given.topic.clone(),
            subscription: given.subscription.clone(),
            since_ms,
            fired_at_ms,
            at_ms,
            node,
        }
    }

    /// The JSON bytes to post and sign.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self)
            .unwrap_or_else(|_| unreachable!("strings, numbers and options always serialize"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::alerts::rule::AlertRule;
    use crate::governance::alerts::webhook_policy::WebhookPolicy;

    fn backlog_rule() -> ValidRule {
        AlertRule {
            name: "orders-backlog".to_owned(),
            kind: AlertKind::Backlog,
            topic: Some("orders".to_owned()),
            subscription: Some("billing".to_owned()),
            threshold: Some(1000.0),
            for_ms: 60_000,
            webhook_url: "https://hooks.example.com/".to_owned(),
            secret: None,
        }
        .validate(&WebhookPolicy::allow_any())
        .expect("valid")
    }

    #[test]
    fn a_firing_event_is_written_with_every_documented_field() {
        let event = AlertEvent::Firing {
            rule: "orders-backlog".to_owned(),
            value: 1500.0,
            since_ms: 1_764_683_000_000,
            at_ms: 1_764_683_060_000,
        };
        let body = AlertEventBody::new(&backlog_rule(), &event, Some(2));
        let json = String::from_utf8(body.to_json()).expect("UTF-8");
        assert_eq!(
            json,
            r#"{"rule":"orders-backlog","kind":"backlog","state":"firing","value":1500.0,"threshold":1000.0,"topic":"orders","subscription":"billing","since_ms":1764683000000,"fired_at_ms":1764683060000,"at_ms":1764683060000,"node":2}"#
        );
        let parsed: AlertEventBody = serde_json::from_str(&json).expect("reads back");
        assert_eq!(parsed, body);
    }

    #[test]
    fn a_resolved_event_keeps_when_it_began_and_fired() {
        let event = AlertEvent::Resolved {
            rule: "orders-backlog".to_owned(),
            value: 10.0,
            since_ms: 1,
            fired_at_ms: 2,
            at_ms: 3,
        };
        let body = AlertEventBody::new(&backlog_rule(), &event, None);
        assert_eq!(body.state, EventState::Resolved);
        assert_eq!((body.since_ms, body.fired_at_ms, body.at_ms), (1, 2, 3));
        let json: serde_json::Value = serde_json::from_slice(&body.to_json()).expect("JSON");
        assert_eq!(json["state"], "resolved");
        assert_eq!(json["node"], serde_json::Value::Null);
    }
}
