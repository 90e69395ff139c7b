//! An alert rule as `POST /v1/alerts/rules` takes it ([`AlertRule`]), its kinds
//! ([`AlertKind`]), and [`AlertRule::validate`], which checks every field and freezes the rule
//! into a [`ValidRule`], the only form the evaluator takes.

use std::fmt;

use broker_core::BrokerError;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::AlertError;
use super::webhook_policy::WebhookPolicy;

/// Longest `webhook_url`, in bytes: 2 KiB is the longest URL that every common server and
/// proxy is known to accept, and a receiver's endpoint is far shorter.
pub(crate) const MAX_WEBHOOK_URL_BYTES: usize = 2048;
/// Largest threshold of a counting kind (`backlog`, `dead_letters`, `produce_errors`): 2^53,
/// the largest integer an `f64` holds exactly, so a count is compared exactly.
pub(crate) const MAX_COUNT_THRESHOLD: f64 = 9_007_199_254_740_992.0;
/// Largest `oldest_unacked_age` threshold, in ms: a year. Bounded so that a unit mistake (µs
/// for ms) is refused rather than stored as a rule that can never fire.
pub(crate) const MAX_AGE_THRESHOLD_MS: f64 = 365.0 * 24.0 * 3600.0 * 1000.0;
/// Largest `disk` threshold: the used share must exceed it, and a share never exceeds 1, so
/// 0.999 (one part in a thousand free) is the last threshold that can fire.
pub(crate) const MAX_DISK_THRESHOLD: f64 = 0.999;
/// Longest `for_ms`: a day. A condition that must hold longer before anyone hears of it is a
/// report, not an alert; the bound also refuses unit mistakes.
pub(crate) const MAX_FOR_MS: u64 = 24 * 3600 * 1000;
/// Shortest per-rule `secret`, in bytes: 16 bytes of a random text are past any guessing of
/// an HMAC key, and shorter secrets are typing mistakes or placeholders.
pub(crate) const MIN_SECRET_BYTES: usize = 16;
/// Longest per-rule `secret`, in bytes: HMAC-SHA256 hashes a key longer than its 64-byte
/// block first, so more adds nothing; 256 leaves room for encoded secrets.
pub(crate) const MAX_SECRET_BYTES: usize = 256;
/// Shortest `for_ms` of `consumer_offline`: a healthy consumer pauses between two receives
/// while it handles a batch; under 5 s such a pause would already count as offline.
pub(crate) const MIN_CONSUMER_OFFLINE_FOR_MS: u64 = 5_000;

/// What a rule watches. Each kind says what its samples' value is (see
/// [`Sample`](super::evaluation::Sample)); the condition is "value above `threshold`",
/// held for `for_ms`, except for [`AlertKind::ConsumerOffline`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// A subscription's backlog, in messages.
    Backlog,
    /// The age of a subscription's oldest unacked message, in ms.
    OldestUnackedAge,
    /// A subscription's backlog is above 0 and no consumer has received or streamed from it
    /// for `for_ms`; `threshold` is not used.
    ConsumerOffline,
    /// Messages dead-lettered in the last minute, for a subscription or (without one) all of
    /// a topic's subscriptions.
    DeadLetters,
    /// Produce requests refused or failed in the last minute, for a topic or (without one)
    /// the node.
    ProduceErrors,
    /// The share of the data folder's file system in use, 0 to 1.
    Disk,
    /// The node's synthetic probe (see [`crate::governance::probe`]) has failed every round for
    /// `for_ms`; the value is its failures in a row. No topic, subscription or threshold.
    Probe,
}

impl AlertKind {
    /// The name on the wire: `backlog`, `oldest_unacked_age`, ….
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Backlog => "backlog",
            AlertKind::OldestUnackedAge => "oldest_unacked_age",
            AlertKind::ConsumerOffline => "consumer_offline",
            AlertKind::DeadLetters => "dead_letters",
            AlertKind::ProduceErrors => "produce_errors",
            AlertKind::Disk => "disk",
            AlertKind::Probe => "probe",
        }
    }

    /// Whether the kind compares a value against `threshold` (all but `consumer_offline` and
    /// `probe`).
    pub fn has_threshold(self) -> bool {
        self.threshold_range().is_some()
    }

    fn scope(self) -> (Need, Need) {
        match self {
            AlertKind::Backlog | AlertKind::OldestUnackedAge | AlertKind::ConsumerOffline => {
                (Need::Required, Need::Required)
            }
            AlertKind::DeadLetters => (Need::Required, Need::Optional),
            AlertKind::ProduceErrors => (Need::Optional, Need::Forbidden),
            AlertKind::Disk | AlertKind::Probe => (Need::Forbidden, Need::Forbidden),
        }
    }

    /// The thresholds that can fire, or `None` for a kind that takes none.
    fn threshold_range(self) -> Option<(f64, f64)> {
        match self {
            AlertKind::Backlog | AlertKind::DeadLetters | AlertKind::ProduceErrors => {
                Some((0.0, MAX_COUNT_THRESHOLD))
            }
            AlertKind::OldestUnackedAge => Some((0.0, MAX_AGE_THRESHOLD_MS)),
            AlertKind::Disk => Some((0.0, MAX_DISK_THRESHOLD)),
            AlertKind::ConsumerOffline | AlertKind::Probe => None,
        }
    }

    fn for_ms_range(self) -> (u64, u64) {
        match self {
            AlertKind::ConsumerOffline => (MIN_CONSUMER_OFFLINE_FOR_MS, MAX_FOR_MS),
            _ => (0, MAX_FOR_MS),
        }
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a kind takes `topic` or `subscription`. No kind takes a subscription without a
/// topic ([`AlertKind::scope`]), so a subscription always names one of a topic's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    Optional,
    Forbidden,
}

/// An alert rule as the API takes and shows it. Unknown fields are refused, as in every
/// request body of the API. Check it with [`AlertRule::validate`].
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AlertRule {
    /// The rule's name, unique on the server: `[A-Za-z0-9._-]{1,200}`, not starting with
    /// `__` (kept for the server's own rules), and not `.` or `..`.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// What the rule watches.
    pub kind: AlertKind,
    /// The topic watched: required by `backlog`, `oldest_unacked_age`, `consumer_offline`
    /// and `dead_letters`; optional for `produce_errors` (absent: every topic); refused by
    /// `disk` and `probe`.
    pub topic: Option<String>,
    /// The subscription watched: required by `backlog`, `oldest_unacked_age` and
    /// `consumer_offline`; optional for `dead_letters` (absent: every subscription of the
    /// topic); refused by `produce_errors`, `disk` and `probe`.
    pub subscription: Option<String>,
    /// The value the kind's measure must exceed: messages (`backlog`), ms
    /// (`oldest_unacked_age`), events per minute (`dead_letters`, `produce_errors`) or a
    /// share from 0 to 0.999 (`disk`). Required, except for `consumer_offline` and `probe`,
    /// which refuse it.
    pub threshold: Option<f64>,
    /// How long the condition must hold before the alert fires, 0 to 86400000 ms (default
    /// 0: at once); `consumer_offline` needs at least 5000 ms.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 86400000)]
    pub for_ms: u64,
    /// Where firing and resolved events are posted: an `http` or `https` URL without user
    /// name or password, at most 2048 bytes, allowed by the server's webhook allow-list.
    #[schema(max_length = 2048)]
    pub webhook_url: String,
    /// The key of this rule's `Wharf-Signature` HMAC, 16 to 256 bytes (absent: the server's
    /// secret). Write-only: stored, never shown in an answer.
    #[serde(default, skip_serializing_if = "never_shown")]
    #[schema(write_only, min_length = 16, max_length = 256)]
    pub secret: Option<String>,
}

/// `secret` is never serialized. Said through `skip_serializing_if` rather than
/// `skip_serializing`, which would also drop the field from the request's schema.
fn never_shown(_: &Option<String>) -> bool {
    true
}

impl AlertRule {
    /// Checks every field, in the order of the struct, and returns the first refusal, or the
    /// rule frozen with its parsed URL and threshold. `policy` holds the operator's webhook
    /// allow-list.
    pub fn validate(&self, policy: &WebhookPolicy) -> Result<ValidRule, AlertError> {
        check_name("name", &self.name)?;
        let (topic_need, subscription_need) = self.kind.scope();
        check_scope(self.kind, "topic", self.topic.as_deref(), topic_need)?;
        check_scope(
            self.kind,
            "subscription",
            self.subscription.as_deref(),
            subscription_need,
        )?;
        let threshold = self.checked_threshold()?;
        let (min, max) = self.kind.for_ms_range();
        if !(min..=max).contains(&self.for_ms) {
            return Err(AlertError::ForMsOutOfRange {
                kind: self.kind,
                value: self.for_ms,
                min,
                max,
            });
        }
        let webhook_url = policy.check_text(&self.webhook_url)?;
        if let Some(secret) = &self.secret
            && !(MIN_SECRET_BYTES..=MAX_SECRET_BYTES).contains(&secret.len())
        {
            return Err(AlertError::SecretLength {
                len: secret.len(),
                min: MIN_SECRET_BYTES,
                max: MAX_SECRET_BYTES,
            });
        }
        Ok(ValidRule {
            rule: self.clone(),
            threshold,
            webhook_url,
        })
    }

    fn checked_threshold(&self) -> Result<f64, AlertError> {
        let kind = self.kind;
        let field = "threshold";
        let (value, (min, max)) = match (self.threshold, kind.threshold_range()) {
            (None, None) => return Ok(0.0),
            (None, Some(_)) => return Err(AlertError::MissingField { field, kind }),
            (Some(_), None) => return Err(AlertError::UnexpectedField { field, kind }),
            (Some(value), Some(range)) => (value, range),
        };
        if !value.is_finite() {
            return Err(AlertError::ThresholdNotFinite { value });
        }
        if !(min..=max).contains(&value) {
            return Err(AlertError::ThresholdOutOfRange {
                kind,
                value,
                min,
                max,
            });
        }
        Ok(value)
    }
}

/// Names follow the topic and subscription rules ([`broker_core::names::validate`]): they
/// appear in paths (`/v1/alerts/rules/{name}`), and `__` stays free for the server's own
/// rules, such as the synthetic probe's.
fn check_name(field: &'static str, name: &str) -> Result<(), AlertError> {
    broker_core::names::validate(field, name).map_err(|error| {
        let reason = match error {
            BrokerError::InvalidArgument { reason, .. } => reason,
            other => other.to_string(),
        };
        AlertError::InvalidName { field, reason }
    })
}

fn check_scope(
    kind: AlertKind,
    field: &'static str,
    value: Option<&str>,
    need: Need,
) -> Result<(), AlertError> {
    match (value, need) {
        (None, Need::Required) => Err(AlertError::MissingField { field, kind }),
        (Some(_), Need::Forbidden) => Err(AlertError::UnexpectedField { field, kind }),
        (Some(name), _) => check_name(field, name),
        (None, _) => Ok(()),
    }
}

/// A rule that passed [`AlertRule::validate`]: the only form the evaluator and the webhook
/// sender take, so neither meets a missing threshold or an unchecked URL.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRule {
    rule: AlertRule,
    threshold: f64,
    webhook_url: Url,
}

impl ValidRule {
    /// The rule as given.
    pub fn rule(&self) -> &AlertRule {
        &self.rule
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.rule.name
    }

    /// The rule's kind.
    pub fn kind(&self) -> AlertKind {
        self.rule.kind
    }

    /// The threshold the value must exceed (0, unused, for `consumer_offline`).
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// How long the condition must hold before the alert fires, in ms.
    pub fn for_ms(&self) -> u64 {
        self.rule.for_ms
    }

    /// The webhook target, parsed and allowed by the policy it was validated against.
    pub fn webhook_url(&self) -> &Url {
        &self.webhook_url
    }

    /// The rule's own signing secret, if it has one.
    pub fn secret(&self) -> Option<&str> {
        self.rule.secret.as_deref()
    }
}

#[cfg(test)]
mod tests;
