//! Subscription settings: what a create request may set, validated into what is stored.

use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::limits::{
    DEFAULT_ACK_TIMEOUT_MS, DEFAULT_MAX_DELIVERIES, MAX_ACK_TIMEOUT_MS, MAX_MAX_DELIVERIES,
    MAX_NAME_LEN, MIN_ACK_TIMEOUT_MS,
};
use crate::names;
pub use crate::tags::valid_tag;

/// The order in which a subscription delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Ordering {
    /// Any order; as many messages in flight as consumers take (the default).
    #[default]
    None,
    /// Per key, in publish order, one at a time: the next message of a key only after the
    /// previous one is acked or dead-lettered. Messages of other keys flow meanwhile.
    Key,
}

/// Which messages a subscription delivers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Filter {
    /// Only messages carrying at least one of these tags; empty: every message.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Filter {
    /// Whether a message with these tags passes.
    pub fn wants(&self, tags: &[String]) -> bool {
        self.tags.is_empty() || tags.iter().any(|tag| self.tags.contains(tag))
    }
}

/// Where a new subscription starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StartPosition {
    /// At the end of the log: only messages published after creation (the default).
    #[default]
    Latest,
    /// At the oldest message still stored.
    Earliest,
}

/// Exponential backoff between redeliveries: `initial × multiplier^(n-1)`, capped at `max`,
/// where n counts the failed deliveries so far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Pause after the first failed delivery, in milliseconds.
    pub initial_backoff_ms: u64,
    /// Longest pause, in milliseconds.
    pub max_backoff_ms: u64,
    /// Growth factor per failed delivery (1.0 to 10.0).
    pub multiplier: f64,
}

/// Longest retry backoff accepted: one day. Longer pauses belong to delayed messages.
pub const MAX_BACKOFF_CEILING_MS: u64 = 24 * 60 * 60 * 1000;

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial_backoff_ms: 1_000,
            max_backoff_ms: 600_000,
            multiplier: 2.0,
        }
    }
}

impl RetryPolicy {
    /// Pause before redelivering a message that has failed `failed_deliveries` times (≥ 1).
    pub fn backoff_ms(&self, failed_deliveries: u32) -> u64 {
        let exponent = i32::try_from(failed_deliveries.saturating_sub(1)).unwrap_or(i32::MAX);
        let pause = self.initial_backoff_ms as f64 * self.multiplier.powi(exponent);
        if pause.is_finite() && pause < self.max_backoff_ms as f64 {
            pause as u64
        } else {
            self.max_backoff_ms
        }
    }

    fn validate(&self) -> Result<(), BrokerError> {
        if self.max_backoff_ms > MAX_BACKOFF_CEILING_MS {
            return Err(BrokerError::invalid(
                "retry.max_backoff_ms",
                format!(
                    "must be at most {MAX_BACKOFF_CEILING_MS}, got {}",
                    self.max_backoff_ms
                ),
            ));
        }
        if self.initial_backoff_ms > self.max_backoff_ms {
            return Err(BrokerError::invalid(
                "retry.initial_backoff_ms",
                format!(
                    "must not exceed max_backoff_ms ({}), got {}",
                    self.max_backoff_ms, self.initial_backoff_ms
                ),
            ));
        }
        if !(1.0..=10.0).contains(&self.multiplier) {
            return Err(BrokerError::invalid(
                "retry.multiplier",
                format!("must be 1.0 to 10.0, got {}", self.multiplier),
            ));
        }
        Ok(())
    }
}

/// What a create request may set; `None` takes the default.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionSpec {
    /// The subscription's name.
    pub name: String,
    /// Where it starts.
    pub start: Option<StartPosition>,
    /// Default lease of a received message.
    pub ack_timeout_ms: Option<u64>,
    /// Backoff between redeliveries.
    pub retry: Option<RetryPolicy>,
    /// Deliveries before a message moves to the dead-letter topic (default 16).
    pub max_deliveries: Option<u32>,
    /// Name of the dead-letter topic (default `<topic>.<name>.dlq`, created on demand).
    pub dead_letter_topic: Option<String>,
    /// Which messages to deliver.
    pub filter: Option<Filter>,
    /// Delivery order.
    pub ordering: Option<Ordering>,
}

/// A subscription's settings as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionConfig {
    /// The topic it reads.
    pub topic: String,
    /// Its name.
    pub name: String,
    /// Where it started.
    pub start: StartPosition,
    /// Default lease, in milliseconds.
    pub ack_timeout_ms: u64,
    /// Backoff between redeliveries.
    pub retry: RetryPolicy,
    /// Deliveries before a message moves to the dead-letter topic.
    pub max_deliveries: u32,
    /// The dead-letter topic.
    pub dead_letter_topic: String,
    /// Which messages to deliver.
    pub filter: Filter,
    /// Delivery order.
    pub ordering: Ordering,
    /// Creation time, Unix epoch milliseconds.
    pub created_ms: u64,
    /// Unique id of this incarnation: receipts of a deleted and re-created subscription fail.
    pub uid: u64,
}

impl SubscriptionConfig {
    /// What the lease tables act on.
    pub fn table_policy(&self) -> crate::subscription::TablePolicy {
        crate::subscription::TablePolicy {
            ordered_by_key: self.ordering == Ordering::Key,
            max_deliveries: self.max_deliveries,
        }
    }
}

/// Checks a lease duration against API.md's 1 s..=12 h.
pub fn validate_ack_timeout(field: &'static str, ms: u64) -> Result<u64, BrokerError> {
    if (MIN_ACK_TIMEOUT_MS..=MAX_ACK_TIMEOUT_MS).contains(&ms) {
        Ok(ms)
    } else {
        Err(BrokerError::invalid(
            field,
            format!("must be {MIN_ACK_TIMEOUT_MS} to {MAX_ACK_TIMEOUT_MS} milliseconds, got {ms}"),
        ))
    }
}

impl SubscriptionSpec {
    /// Validates the spec and fills in defaults.
    pub fn into_config(
        self,
        topic: &str,
        created_ms: u64,
        uid: u64,
    ) -> Result<SubscriptionConfig, BrokerError> {
        names::validate("name", &self.name)?;
        let ack_timeout_ms = validate_ack_timeout(
            "ack_timeout_ms",
            self.ack_timeout_ms.unwrap_or(DEFAULT_ACK_TIMEOUT_MS),
        )?;
        let retry = self.retry.unwrap_or_default();
        retry.validate()?;
        let max_deliveries = self.max_deliveries.unwrap_or(DEFAULT_MAX_DELIVERIES);
        if !(1..=MAX_MAX_DELIVERIES).contains(&max_deliveries) {
            return Err(BrokerError::invalid(
                "max_deliveries",
                format!("must be 1 to {MAX_MAX_DELIVERIES}, got {max_deliveries}"),
            ));
        }
        let dead_letter_topic = match self.dead_letter_topic {
            Some(name) => name,
            None => {
                let name = format!("{topic}.{}.dlq", self.name);
                if name.len() > MAX_NAME_LEN {
                    return Err(BrokerError::invalid(
                        "dead_letter_topic",
                        format!(
                            "the default name {name:?} is longer than {MAX_NAME_LEN}: give one"
                        ),
                    ));
                }
                name
            }
        };
        // The default dead-letter name of an internal topic's subscription is internal too.
        match names::is_internal(topic) {
            true => names::validate_internal("dead_letter_topic", &dead_letter_topic)?,
            false => names::validate("dead_letter_topic", &dead_letter_topic)?,
        }
        if dead_letter_topic == topic {
            return Err(BrokerError::invalid(
                "dead_letter_topic",
                "must not be the topic itself",
            ));
        }
        let filter = self.filter.unwrap_or_default();
        crate::tags::validate("filter.tags", &filter.tags)?;
        Ok(SubscriptionConfig {
            topic: topic.to_owned(),
            name: self.name,
            start: self.start.unwrap_or_default(),
            ack_timeout_ms,
            retry,
            max_deliveries,
            dead_letter_topic,
            filter,
            ordering: self.ordering.unwrap_or_default(),
            created_ms,
            uid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_and_is_capped() {
        let policy = RetryPolicy {
            initial_backoff_ms: 100,
            max_backoff_ms: 1_000,
            multiplier: 2.0,
        };
        let pauses: Vec<u64> = (1..=6).map(|n| policy.backoff_ms(n)).collect();
        assert_eq!(pauses, vec![100, 200, 400, 800, 1_000, 1_000]);
        assert_eq!(policy.backoff_ms(u32::MAX), 1_000);
    }

    #[test]
    fn ack_timeout_is_bounded_on_both_sides() {
        assert!(validate_ack_timeout("f", MIN_ACK_TIMEOUT_MS - 1).is_err());
        assert!(validate_ack_timeout("f", MIN_ACK_TIMEOUT_MS).is_ok());
        assert!(validate_ack_timeout("f", MAX_ACK_TIMEOUT_MS).is_ok());
        assert!(validate_ack_timeout("f", MAX_ACK_TIMEOUT_MS + 1).is_err());
    }

    #[test]
    fn retry_policy_relations_are_checked() {
        let spec = |retry| SubscriptionSpec {
            name: "s".into(),
            retry: Some(retry),
            ..SubscriptionSpec::default()
        };
        let bad_order = RetryPolicy {
            initial_backoff_ms: 10,
            max_backoff_ms: 5,
            multiplier: 2.0,
        };
        assert!(spec(bad_order).into_config("t", 0, 0).is_err());
        let bad_multiplier = RetryPolicy {
            multiplier: 0.5,
            ..RetryPolicy::default()
        };
        assert!(spec(bad_multiplier).into_config("t", 0, 0).is_err());
        assert!(spec(RetryPolicy::default()).into_config("t", 0, 0).is_ok());
    }
}
