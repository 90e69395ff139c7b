//! The evaluation task: [`evaluate_loop`] samples every rule each tick, feeds its
//! [`RuleEvaluator`], queues the events it emits ([`super::outbox`]) and publishes the
//! active alerts ([`ActiveAlert`], with the built-in one of a failing synthetic probe,
//! [`BUILTIN_PROBE_ALERT`]) and the `wharf_alerts_active` gauge. In a cluster the
//! controller leader alone evaluates, over figures gathered from every node
//! ([`super::cluster_figures`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::SubscriptionStats;
use broker_core::clock::steady_ms;
use broker_core::{Broker, BrokerError};
use metrics::gauge;
use serde::Serialize;
use tokio::sync::watch;
use utoipa::ToSchema;

use super::cluster_figures::{ClusterFigures, FiguresAsk};
use super::evaluation::{AlertEvent, RuleEvaluator, RuleState, Sample};
use super::event_body::AlertEventBody;
use super::outbox::Pending;
use super::per_minute::PerMinuteRate;
use super::rule::{AlertKind, ValidRule};
use super::runtime::Alerts;
use super::signature::WebhookSigner;
use crate::governance::metrics::ALERTS_ACTIVE;

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
    /// For the `probe` kind in a cluster: the nodes whose probe is failing (the value is
    /// the most failures in a row among them). Empty otherwise.
    pub nodes: Vec<u64>,
}

/// One rule under evaluation, with the rate its counting kinds need.
struct Watched {
    evaluator: RuleEvaluator,
    rate: PerMinuteRate,
}

/// Samples and evaluates every rule of `alerts` each [`Alerts::tick_ms`] until `stop`
/// turns true. In a cluster only the controller leader evaluates; a node that stops leading
/// drops its evaluators without events, and one that comes to lead starts every rule afresh.
pub(crate) async fn evaluate_loop(
    alerts: Arc<Alerts>,
    broker: Arc<Broker>,
    mut stop: watch::Receiver<bool>,
) {
    let mut watched: BTreeMap<String, Watched> = BTreeMap::new();
    let mut evaluating_since: Option<u64> = None;
    let mut interval = tokio::time::interval(Duration::from_millis(alerts.tick_ms()));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = interval.tick() => {}
        }
        tick(&alerts, &broker, &mut watched, &mut evaluating_since).await;
    }
}

/// Where a tick's samples come from: this node's broker (a single node), or every node's
/// figures gathered by the evaluating node of a cluster.
enum View<'a> {
    Local(&'a Broker),
    Cluster(ClusterFigures),
}

impl View<'_> {
    async fn subscription(&self, topic: &str, sub: &str) -> Result<SubscriptionStats, BrokerError> {
        match self {
            View::Local(broker) => Ok(broker.describe_subscription(topic, sub).await?.stats),
            View::Cluster(figures) => figures.subscription(topic, sub),
        }
    }

    async fn dead_letters(&self, topic: &str) -> Result<u64, BrokerError> {
        Ok(match self {
            View::Local(broker) => broker
                .list_subscriptions(topic)
                .await?
                .iter()
                .map(|info| info.stats.dead_lettered)
                .sum(),
            View::Cluster(figures) => figures
                .subscriptions(topic)?
                .iter()
                .map(|stats| stats.dead_lettered)
                .sum(),
        })
    }

    fn last_receive_ms(&self, topic: &str, sub: &str) -> Result<Option<u64>, BrokerError> {
        match self {
            View::Local(broker) => broker.last_receive_ms(topic, sub),
            View::Cluster(figures) => figures.last_receive_ms(topic, sub),
        }
    }

    fn produce_errors(&self, alerts: &Alerts, topic: Option<&str>) -> u64 {
        match self {
            View::Local(_) => alerts.produce_errors().total(topic),
            View::Cluster(figures) => figures.produce_errors(topic),
        }
    }

    fn disk_share(&self) -> Option<f64> {
        match self {
            View::Local(broker) => broker.used_disk_share(),
            View::Cluster(figures) => figures.disk_share(),
        }
    }

    /// The probe's failures in a row (in a cluster, the most of any node's), `None` until
    /// a round has finished (on some node).
    fn probe_failures(&self, alerts: &Alerts) -> Option<u64> {
        match self {
            View::Local(_) => alerts.probe().failures(),
            View::Cluster(figures) => figures.probe_failures(),
        }
    }

    /// Steady ms (this node's clock) since which the probe has been failing (in a cluster,
    /// the earliest of the failing nodes'), and the failing nodes (none on a single node).
    fn probe_failing(&self, alerts: &Alerts) -> Option<(u64, Vec<u64>)> {
        match self {
            View::Local(_) => alerts.probe().failing_since_ms().map(|s| (s, Vec::new())),
            View::Cluster(figures) => figures.probe_failing(),
        }
    }
}

/// What every node is asked for so that `rules` can be sampled.
fn figures_ask(rules: &BTreeMap<String, ValidRule>) -> FiguresAsk {
    let mut ask = FiguresAsk::default();
    for rule in rules.values() {
        let topic = rule.rule().topic.clone();
        match rule.kind() {
            AlertKind::ProduceErrors => {
                if !ask.produce_scopes.contains(&topic) {
                    ask.produce_scopes.push(topic);
                }
            }
            AlertKind::Disk => {}
            _ => {
                if let Some(topic) = topic
                    && !ask.topics.contains(&topic)
                {
                    ask.topics.push(topic);
                }
            }
        }
    }
    ask
}

/// One round: reconcile the evaluators with the rule book, sample, evaluate, publish.
///
/// In a cluster only the controller leader evaluates: a node that does not lead drops its
/// evaluators (no events: the leader evaluates those rules now) and lists no alerts, and a
/// node that comes to lead starts every rule afresh from ok (a pending rule's `for_ms`
/// starts again; an alert the previous leader had fired fires again if its condition still
/// holds once `for_ms` has passed). `evaluating_since` is when this node began to evaluate.
async fn tick(
    alerts: &Alerts,
    broker: &Broker,
    watched: &mut BTreeMap<String, Watched>,
    evaluating_since: &mut Option<u64>,
) {
    let now = steady_ms();
    let clustered = alerts.clustered();
    if let Some(clustered) = clustered
        && !clustered.evaluates()
    {
        if evaluating_since.take().is_some() {
            tracing::info!("this node no longer evaluates alert rules (not the controller leader)");
        }
        watched.clear();
        publish(alerts, watched, None);
        return;
    }
    let since = *evaluating_since.get_or_insert_with(|| {
        if clustered.is_some() {
            tracing::info!("this node evaluates the alert rules (the controller leader)");
        }
        now
    });
    let rules: BTreeMap<String, ValidRule> = alerts
        .book()
        .all()
        .into_iter()
        .map(|rule| (rule.name().to_owned(), rule))
        .collect();
    let view = match clustered {
        None => View::Local(broker),
        // No rule and no probe: nothing to ask the other nodes.
        Some(_) if rules.is_empty() && alerts.probe().status().interval_ms == 0 => {
            View::Cluster(ClusterFigures::default())
        }
        Some(clustered) => {
            View::Cluster(clustered.gather(broker, alerts, &figures_ask(&rules)).await)
        }
    };
    // A subscription nobody received from since counts as quiet from when this node began
    // to evaluate (its start on a single node).
    let quiet_from = match clustered {
        None => alerts.started_ms(),
        Some(_) => since,
    };
    // Gathering took time: the samples are as of now.
    let now = steady_ms();
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
        let sampled = sample(alerts, &view, &rule, &mut entry.rate, now, quiet_from).await;
        let sample = match sampled {
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
    publish(alerts, watched, builtin_probe_alert(alerts, &view));
}

/// What `rule` watches, now; `None` when there is nothing to sample (a disk that cannot be
/// asked). `quiet_from` is the steady ms from which a subscription never received from
/// counts as quiet.
async fn sample(
    alerts: &Alerts,
    view: &View<'_>,
    rule: &ValidRule,
    rate: &mut PerMinuteRate,
    now: u64,
    quiet_from: u64,
) -> Result<Option<Sample>, BrokerError> {
    let given = rule.rule();
    let topic = given.topic.as_deref();
    let subscription = given.subscription.as_deref();
    let sample = match (rule.kind(), topic, subscription) {
        (AlertKind::Backlog, Some(topic), Some(sub)) => {
            let stats = view.subscription(topic, sub).await?;
            Sample::Value(stats.backlog as f64)
        }
        (AlertKind::OldestUnackedAge, Some(topic), Some(sub)) => {
            let stats = view.subscription(topic, sub).await?;
            Sample::Value(stats.oldest_unacked_age_ms.unwrap_or(0) as f64)
        }
        (AlertKind::ConsumerOffline, Some(topic), Some(sub)) => {
            let stats = view.subscription(topic, sub).await?;
            let last = view.last_receive_ms(topic, sub)?.unwrap_or(0);
            Sample::Consumers {
                backlog: stats.backlog,
                last_activity_ms: Some(last.max(quiet_from)),
            }
        }
        (AlertKind::DeadLetters, Some(topic), Some(sub)) => {
            let stats = view.subscription(topic, sub).await?;
            Sample::Value(rate.observe(now, stats.dead_lettered) as f64)
        }
        (AlertKind::DeadLetters, Some(topic), None) => {
            let total = view.dead_letters(topic).await?;
            Sample::Value(rate.observe(now, total) as f64)
        }
        (AlertKind::ProduceErrors, topic, None) => {
            let total = view.produce_errors(alerts, topic);
            Sample::Value(rate.observe(now, total) as f64)
        }
        (AlertKind::Disk, None, None) => match view.disk_share() {
            Some(share) => Sample::Value(share),
            None => return Ok(None),
        },
        (AlertKind::Probe, None, None) => match view.probe_failures(alerts) {
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
    let node = alerts.clustered().map(|c| c.node().node_id());
    let body = AlertEventBody::new(rule, event, node);
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
pub(crate) const BUILTIN_PROBE_ALERT: &str = "__wharf.probe";

/// The built-in alert of a failing synthetic probe: active from its first failed round of a
/// run until a round succeeds (in a cluster: while any node's probe fails), without any
/// rule (so without a webhook: a `probe` rule routes it to one).
fn builtin_probe_alert(alerts: &Alerts, view: &View<'_>) -> Option<ActiveAlert> {
    let (since_ms, nodes) = view.probe_failing(alerts)?;
    let failures = view.probe_failures(alerts)?;
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
        nodes,
    })
}

/// Publishes the firing alerts (with the built-in probe alert, `builtin`) for
/// `GET /v1/alerts` and the gauge.
fn publish(alerts: &Alerts, watched: &BTreeMap<String, Watched>, builtin: Option<ActiveAlert>) {
    let failing_nodes = builtin
        .as_ref()
        .map(|b| b.nodes.clone())
        .unwrap_or_default();
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
                nodes: match given.kind {
                    AlertKind::Probe => failing_nodes.clone(),
                    _ => Vec::new(),
                },
            })
        })
        .collect();
    if let Some(builtin) = builtin {
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
