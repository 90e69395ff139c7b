//! The evaluation task: [`evaluate_loop`] samples every rule each tick, feeds its
//! [`RuleEvaluator`], queues the events it emits ([`super::outbox`]) and publishes the
//! active alerts ([`ActiveAlert`], with the built-in one of a failing synthetic probe,
//! [`BUILTIN_PROBE_ALERT`]) and the `wharf_alerts_active` gauge.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::clock::steady_ms;
use broker_core::{Broker, BrokerError};
use metrics::gauge;
use serde::Serialize;
use tokio::sync::watch;
use utoipa::ToSchema;

use super::evaluation::{AlertEvent, RuleEvaluator, RuleState, Sample};
use super::event_body::AlertEventBody;
use super::outbox::Pending;
use super::per_minute::PerMinuteRate;
use super::rule::{AlertKind, ValidRule};
use super::runtime::Alerts;
use super::signature::WebhookSigner;
use crate::metrics::ALERTS_ACTIVE;
use crate::produce_errors::ProduceErrors;

/// Every kind, for the gauge (a kind with no active alert shows 0).
const KINDS: [AlertKind; 7] = [
    AlertKind::Backlog,
    AlertKind::OldestUnackedAge,
    AlertKind::ConsumerOffline,
    AlertKind::DeadLetters,
    AlertKind::ProduceErrors,
    AlertKind::Disk,
    AlertKind::Probe,
];

/// An alert that is firing, as `GET /v1/alerts` lists it. Times are epoch ms on the node's
/// steady clock, as in webhook bodies.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ActiveAlert {
    /// The rule's name (`__wharf.probe` for the built-in alert of a failing probe).
    pub rule: String,
    /// The rule's kind.
    pub kind: AlertKind,
    /// Always `firing` (pending rules are not alerts yet).
    pub state: String,
    /// The rule's topic, if it has one.
    pub topic: Option<String>,
    /// The rule's subscription, if it has one.
    pub subscription: Option<String>,
    /// When the condition began to hold.
    pub since_ms: u64,
    /// When the alert fired.
    pub fired_at_ms: u64,
    /// The value last sampled (for `consumer_offline`, the backlog; for `probe`, its
    /// failures in a row).
    pub value: f64,
    /// The rule's threshold (`null` for `consumer_offline` and `probe`).
    pub threshold: Option<f64>,
}

/// One rule under evaluation, with the rate its counting kinds need.
struct Watched {
    evaluator: RuleEvaluator,
    rate: PerMinuteRate,
}

/// What the rules are sampled from: the broker, and the node's produce error counter.
#[derive(Debug, Clone)]
pub struct Figures {
    /// The broker (backlogs, ages, dead letters, the disk).
    pub broker: Arc<Broker>,
    /// Failed produce requests, as the request middleware counts them.
    pub produce_errors: Arc<ProduceErrors>,
}

/// Samples and evaluates every rule of `alerts` each [`Alerts::tick_ms`] until `stop`
/// turns true.
pub async fn evaluate_loop(alerts: Arc<Alerts>, figures: Figures, mut stop: watch::Receiver<bool>) {
    let mut watched: BTreeMap<String, Watched> = BTreeMap::new();
    let mut interval = tokio::time::interval(Duration::from_millis(alerts.tick_ms()));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = interval.tick() => {}
        }
        tick(&alerts, &figures, &mut watched).await;
    }
}

/// One round: reconcile the evaluators with the rule book, sample, evaluate, publish.
async fn tick(alerts: &Alerts, figures: &Figures, watched: &mut BTreeMap<String, Watched>) {
    let now = steady_ms();
    let rules: BTreeMap<String, ValidRule> = alerts
        .book()
        .all()
        .into_iter()
        .map(|rule| (rule.name().to_owned(), rule))
        .collect();
    let gone: Vec<String> = watched
        .keys()
        .filter(|name| !rules.contains_key(*name))
        .cloned()
        .collect();
    for name in gone {
        if let Some(old) = watched.remove(&name) {
            let rule = old.evaluator.rule().clone();
            if let Some(event) = old.evaluator.retire(now) {
                queue(alerts, &rule, &event);
            }
        }
    }
    for (name, rule) in rules {
        let entry = watched.entry(name).or_insert_with(|| Watched {
            evaluator: RuleEvaluator::new(rule.clone()),
            rate: PerMinuteRate::new(),
        });
        if entry.evaluator.rule() != &rule {
            let old = entry.evaluator.rule().clone();
            if let Some(event) = entry.evaluator.replace_rule(rule.clone(), now) {
                queue(alerts, &old, &event);
            }
            entry.rate = PerMinuteRate::new();
        }
        let sample = match sample(alerts, figures, &rule, &mut entry.rate, now).await {
            Ok(Some(sample)) => sample,
            Ok(None) => continue,
            // What the rule watches is gone: its condition no longer holds, so a firing
            // alert resolves rather than staying active forever.
            Err(BrokerError::TopicNotFound { .. } | BrokerError::SubscriptionNotFound { .. }) => {
                gone_sample(rule.kind())
            }
            Err(error) => {
                tracing::debug!(rule = rule.name(), %error, "an alert rule could not be sampled");
                continue;
            }
        };
        match entry.evaluator.observe(now, sample) {
            Ok(Some(event)) => queue(alerts, &rule, &event),
            Ok(None) => {}
            Err(error) => {
                tracing::error!(rule = rule.name(), %error, "evaluating an alert rule failed")
            }
        }
    }
    publish(alerts, watched);
}

/// What `rule` watches, now; `None` when there is nothing to sample (a disk that cannot be
/// asked).
async fn sample(
    alerts: &Alerts,
    figures: &Figures,
    rule: &ValidRule,
    rate: &mut PerMinuteRate,
    now: u64,
) -> Result<Option<Sample>, BrokerError> {
    let broker = &figures.broker;
    let given = rule.rule();
    let topic = given.topic.as_deref();
    let subscription = given.subscription.as_deref();
    let sample = match (rule.kind(), topic, subscription) {
        (AlertKind::Backlog, Some(topic), Some(sub)) => {
            let stats = broker.describe_subscription(topic, sub).await?.stats;
            Sample::Value(stats.backlog as f64)
        }
        (AlertKind::OldestUnackedAge, Some(topic), Some(sub)) => {
            let stats = broker.describe_subscription(topic, sub).await?.stats;
            Sample::Value(stats.oldest_unacked_age_ms.unwrap_or(0) as f64)
        }
        (AlertKind::ConsumerOffline, Some(topic), Some(sub)) => {
            let stats = broker.describe_subscription(topic, sub).await?.stats;
            let last = broker.last_receive_ms(topic, sub)?.unwrap_or(0);
            Sample::Consumers {
                backlog: stats.backlog,
                last_activity_ms: Some(last.max(alerts.started_ms())),
            }
        }
        (AlertKind::DeadLetters, Some(topic), Some(sub)) => {
            let stats = broker.describe_subscription(topic, sub).await?.stats;
            Sample::Value(rate.observe(now, stats.dead_lettered) as f64)
        }
        (AlertKind::DeadLetters, Some(topic), None) => {
            let total = broker
                .list_subscriptions(topic)
                .await?
                .iter()
                .map(|info| info.stats.dead_lettered)
                .sum();
            Sample::Value(rate.observe(now, total) as f64)
        }
        (AlertKind::ProduceErrors, topic, None) => {
            let total = figures.produce_errors.total(topic);
            Sample::Value(rate.observe(now, total) as f64)
        }
        (AlertKind::Disk, None, None) => match broker.used_disk_share() {
            Some(share) => Sample::Value(share),
            None => return Ok(None),
        },
        (AlertKind::Probe, None, None) => match alerts.probe().failures() {
            Some(failures) => Sample::Value(failures as f64),
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(sample))
}

/// The sample of a rule whose topic or subscription no longer exists: nothing waits.
fn gone_sample(kind: AlertKind) -> Sample {
    match kind {
        AlertKind::ConsumerOffline => Sample::Consumers {
            backlog: 0,
            last_activity_ms: None,
        },
        _ => Sample::Value(0.0),
    }
}

/// Queues `event` of `rule` for its webhook, signed with the rule's secret or the server's.
fn queue(alerts: &Alerts, rule: &ValidRule, event: &AlertEvent) {
    let body = AlertEventBody::new(rule, event, None);
    tracing::info!(rule = rule.name(), state = ?body.state, value = body.value, "alert event");
    let signer = match rule.secret() {
        Some(secret) => WebhookSigner::new(secret.as_bytes()),
        None => alerts.server_signer().clone(),
    };
    let created_ms = match event {
        AlertEvent::Firing { at_ms, .. } | AlertEvent::Resolved { at_ms, .. } => *at_ms,
    };
    alerts.outbox().push(Pending {
        rule: rule.name().to_owned(),
        url: rule.webhook_url().clone(),
        body: body.to_json(),
        signer,
        created_ms,
        failed: 0,
        due_ms: created_ms,
    });
}

/// The name under which `GET /v1/alerts` lists the built-in probe alert: `__` names are
/// the server's, so no rule can take it.
pub const BUILTIN_PROBE_ALERT: &str = "__wharf.probe";

/// The built-in alert of a failing synthetic probe: active from its first failed round of a
/// run until a round succeeds, without any rule (so without a webhook: a `probe` rule
/// routes it to one).
fn builtin_probe_alert(alerts: &Alerts) -> Option<ActiveAlert> {
    let since_ms = alerts.probe().failing_since_ms()?;
    let failures = alerts.probe().failures()?;
    Some(ActiveAlert {
        rule: BUILTIN_PROBE_ALERT.to_owned(),
        kind: AlertKind::Probe,
        state: "firing".to_owned(),
        topic: None,
        subscription: None,
        since_ms,
        fired_at_ms: since_ms,
        value: failures as f64,
        threshold: None,
    })
}

/// Publishes the firing alerts (with the built-in probe alert) for `GET /v1/alerts` and the
/// gauge.
fn publish(alerts: &Alerts, watched: &BTreeMap<String, Watched>) {
    let mut active: Vec<ActiveAlert> = watched
        .values()
        .filter_map(|w| {
            let RuleState::Firing {
                since_ms,
                fired_at_ms,
            } = w.evaluator.state()
            else {
                return None;
            };
            let given = w.evaluator.rule().rule();
            Some(ActiveAlert {
                rule: given.name.clone(),
                kind: given.kind,
                state: "firing".to_owned(),
                topic: given.topic.clone(),
                subscription: given.subscription.clone(),
                since_ms,
                fired_at_ms,
                value: w.evaluator.last_value(),
                threshold: given.threshold,
            })
        })
        .collect();
    if let Some(builtin) = builtin_probe_alert(alerts) {
        // Listed in name order with the rules' alerts.
        let at = active.partition_point(|alert| alert.rule.as_str() < BUILTIN_PROBE_ALERT);
        active.insert(at, builtin);
    }
    for kind in KINDS {
        let count = active.iter().filter(|a| a.kind == kind).count();
        gauge!(ALERTS_ACTIVE, "kind" => kind.as_str()).set(count as f64);
    }
    alerts.set_active(active);
}
