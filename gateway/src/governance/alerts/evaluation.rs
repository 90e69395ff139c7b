//! The evaluation of one rule: [`RuleEvaluator`] takes samples stamped with steady time
//! ([`broker_core::clock::steady_ms`], read by the caller) and moves
//! `ok → pending → firing → ok`, returning an [`AlertEvent`] exactly once per firing and
//! once per resolution. No I/O, no clock: the caller samples, this decides.
//!
//! - A sample *breaches* when its value is above the rule's threshold; for `probe`, when
//!   the probe has failed (its failures in a row are above 0); for
//!   `consumer_offline`, when the backlog is above 0, counted from the later of the first
//!   such sample and the consumers' last activity.
//! - The first breaching sample makes the rule pending since its time; a breach that has
//!   held for `for_ms` fires (at once when `for_ms` is 0). A sample that does not breach
//!   returns the rule to ok, resolving it if it was firing.
//! - A gap of more than [`MAX_SAMPLE_GAP_MS`] between samples restarts a pending rule: the
//!   condition is not assumed to have held while nobody looked. A firing rule stays firing
//!   across a gap while the condition still holds: a receiver that got a firing event always
//!   gets its resolution, and never a second firing for one episode.
//! - A consumer's activity after a `consumer_offline` alert began resolves it (the
//!   consumer came back); the rule is then pending from that activity.
//! - A changed rule ([`RuleEvaluator::replace_rule`]) or a deleted one
//!   ([`RuleEvaluator::retire`]) resolves a firing alert and starts from ok.

use super::error::AlertError;
use super::rule::{AlertKind, ValidRule};

/// Longest pause between two samples over which a pending condition is taken to have held,
/// in ms. Rules are evaluated every few seconds; a pause of 30 s means the evaluator was
/// stalled (a paused process, a node busy catching up), and what happened meanwhile is
/// unknown.
pub(crate) const MAX_SAMPLE_GAP_MS: u64 = 30_000;

/// One observation of what a rule watches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sample {
    /// The kind's measure (every kind but `consumer_offline`): backlog in messages, oldest
    /// unacked age in ms, dead letters or produce errors in the last minute (see
    /// [`PerMinuteRate`](super::per_minute::PerMinuteRate)), the used share of the disk, or
    /// the probe's failures in a row.
    Value(f64),
    /// A subscription's consumers (`consumer_offline`).
    Consumers {
        /// Messages waiting for delivery.
        backlog: u64,
        /// Steady ms of the last receive; the sample's own time while a stream is open; `None`
        /// if no consumer has been seen since the node started.
        last_activity_ms: Option<u64>,
    },
}

/// Where a rule stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleState {
    /// The condition does not hold (or has not been sampled).
    Ok,
    /// The condition holds, not yet for `for_ms`.
    Pending {
        /// Steady ms since which it holds.
        since_ms: u64,
    },
    /// The condition has held for `for_ms`; the alert is active.
    Firing {
        /// Steady ms since which it holds.
        since_ms: u64,
        /// Steady ms at which the alert fired.
        fired_at_ms: u64,
    },
}

/// A transition to report to the rule's webhook. The value is the sample's (for
/// `consumer_offline`, the backlog).
#[derive(Debug, Clone, PartialEq)]
pub enum AlertEvent {
    /// The condition has held for `for_ms`.
    Firing {
        /// The rule's name.
        rule: String,
        /// The value that fired it.
        value: f64,
        /// Steady ms since which the condition holds.
        since_ms: u64,
        /// Steady ms of the sample that fired it.
        at_ms: u64,
    },
    /// A firing alert ended: the condition no longer holds, or the rule changed or went.
    Resolved {
        /// The rule's name.
        rule: String,
        /// The value that resolved it (the last one sampled, when the rule changed or went).
        value: f64,
        /// Steady ms since which the condition held.
        since_ms: u64,
        /// Steady ms at which the alert fired.
        fired_at_ms: u64,
        /// Steady ms of the resolution.
        at_ms: u64,
    },
}

impl AlertEvent {
    /// The name of the rule it belongs to.
    pub fn rule(&self) -> &str {
        match self {
            AlertEvent::Firing { rule, .. } | AlertEvent::Resolved { rule, .. } => rule,
        }
    }
}

/// What a sample says: the value to report, and, when the condition holds, the earliest
/// steady ms it may be counted from.
struct Reading {
    value: f64,
    breach_from: Option<u64>,
}

/// One rule's evaluation state.
#[derive(Debug, Clone)]
pub struct RuleEvaluator {
    rule: ValidRule,
    state: RuleState,
    last_sample_ms: Option<u64>,
    last_value: f64,
}

impl RuleEvaluator {
    /// A rule in state ok, not sampled yet.
    pub fn new(rule: ValidRule) -> Self {
        RuleEvaluator {
            rule,
            state: RuleState::Ok,
            last_sample_ms: None,
            last_value: 0.0,
        }
    }

    /// The rule evaluated.
    pub fn rule(&self) -> &ValidRule {
        &self.rule
    }

    /// Where the rule stands.
    pub fn state(&self) -> RuleState {
        self.state
    }

    /// The value of the last sample (0 before the first).
    pub fn last_value(&self) -> f64 {
        self.last_value
    }

    /// Takes the sample taken at steady `now_ms`, and returns the event of the transition it
    /// caused, if any. A sample of the wrong shape for the kind, a value that is not finite or
    /// a time before the previous sample's is refused and changes nothing.
    pub fn observe(
        &mut self,
        now_ms: u64,
        sample: Sample,
    ) -> Result<Option<AlertEvent>, AlertError> {
        if let Some(previous_ms) = self.last_sample_ms
            && now_ms < previous_ms
        {
            return Err(AlertError::SampleOutOfOrder {
                previous_ms,
                now_ms,
            });
        }
        let reading = self.read(now_ms, sample)?;
        let gap = self
            .last_sample_ms
            .is_some_and(|previous| now_ms - previous > MAX_SAMPLE_GAP_MS);
        self.last_sample_ms = Some(now_ms);
        self.last_value = reading.value;
        Ok(match reading.breach_from {
            None => self.resolve(now_ms),
            Some(from) => self.breach(now_ms, from.min(now_ms), gap),
        })
    }

    /// Replaces the rule by a changed one, resolving its firing alert (the caller posts the
    /// event with the old rule, so its receiver sees the end). An equal rule changes nothing.
    pub fn replace_rule(&mut self, rule: ValidRule, now_ms: u64) -> Option<AlertEvent> {
        if rule == self.rule {
            return None;
        }
        let event = self.resolve(now_ms);
        *self = RuleEvaluator::new(rule);
        event
    }

    /// Ends the evaluation of a deleted rule, resolving its firing alert.
    pub fn retire(mut self, now_ms: u64) -> Option<AlertEvent> {
        self.resolve(now_ms)
    }

    fn read(&self, now_ms: u64, sample: Sample) -> Result<Reading, AlertError> {
        let kind = self.rule.kind();
        match (kind, sample) {
            (
                AlertKind::ConsumerOffline,
                Sample::Consumers {
                    backlog,
                    last_activity_ms,
                },
            ) => Ok(Reading {
                value: backlog as f64,
                breach_from: (backlog > 0).then_some(last_activity_ms.unwrap_or(0).min(now_ms)),
            }),
            // The probe's failures in a row: any is a breach, held for `for_ms`.
            (AlertKind::Probe, Sample::Value(failures)) => {
                if !failures.is_finite() {
                    return Err(AlertError::SampleNotFinite { value: failures });
                }
                Ok(Reading {
                    value: failures,
                    breach_from: (failures > 0.0).then_some(0),
                })
            }
            (_, Sample::Value(value)) if kind.has_threshold() => {
                if !value.is_finite() {
                    return Err(AlertError::SampleNotFinite { value });
                }
                Ok(Reading {
                    value,
                    breach_from: (value > self.rule.threshold()).then_some(0),
                })
            }
            _ => Err(AlertError::SampleKindMismatch { kind }),
        }
    }

    /// The condition does not hold (or the rule ends): back to ok.
    fn resolve(&mut self, now_ms: u64) -> Option<AlertEvent> {
        match std::mem::replace(&mut self.state, RuleState::Ok) {
            RuleState::Firing {
                since_ms,
                fired_at_ms,
            } => Some(AlertEvent::Resolved {
                rule: self.rule.name().to_owned(),
                value: self.last_value,
                since_ms,
                fired_at_ms,
                at_ms: now_ms,
            }),
            RuleState::Ok | RuleState::Pending { .. } => None,
        }
    }

    /// The condition holds at `now_ms`, counted from no earlier than `from` (≤ `now_ms`).
    fn breach(&mut self, now_ms: u64, from: u64, gap: bool) -> Option<AlertEvent> {
        let since_ms = match self.state {
            RuleState::Ok => now_ms,
            RuleState::Pending { .. } if gap => now_ms,
            RuleState::Pending { since_ms } => since_ms.max(from),
            RuleState::Firing { since_ms, .. } if from > since_ms => {
                let resolved = self.resolve(now_ms);
                self.state = RuleState::Pending { since_ms: from };
                return resolved;
            }
            RuleState::Firing { .. } => return None,
        };
        debug_assert!(
            since_ms <= now_ms,
            "a condition cannot hold from the future"
        );
        if now_ms - since_ms < self.rule.for_ms() {
            self.state = RuleState::Pending { since_ms };
            return None;
        }
        self.state = RuleState::Firing {
            since_ms,
            fired_at_ms: now_ms,
        };
        Some(AlertEvent::Firing {
            rule: self.rule.name().to_owned(),
            value: self.last_value,
            since_ms,
            at_ms: now_ms,
        })
    }
}

#[cfg(test)]
mod tests;
