//! Alerts in a cluster: what the evaluating node (the controller leader, see
//! [`super::watcher`]) samples, gathered from every node.
//!
//! A subscription's live figures are on its partitions' leaders, the time of the last receive
//! is in memory on whichever node served it, produce errors are counted on the node that
//! refused the produce, and each node has its own disk. So each tick the evaluator asks every
//! other node once, on the cluster port (`POST` [`ALERT_FIGURES_PATH`], proved with the
//! cluster secret: a background task has no client credentials), for its [`NodeFigures`]:
//! per topic the figures of the partitions it leads (as [`LedFigures`]) and how long ago each
//! subscription was last received from there; its produce error counts; its disk's used
//! share. [`ClusterFigures::gather`] merges them: each partition's figures from its leader
//! (the evaluator's own copy where no leader answered), the most recent receive of all
//! nodes, produce errors summed, the fullest disk.
//!
//! Each node's synthetic probe comes with its figures; a node that leaves the ask
//! unanswered counts as a failing probe while probes are on ([`SilentNodes`]).
//!
//! Times cross nodes as ages (ms ago), never as steady clock readings, which differ per
//! process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use broker_core::broker::{FiguresOf, SubscriptionStats, TopicFigures};
use broker_core::clock::steady_ms;
use broker_core::cluster_node::ClusterNode;
use broker_core::{Broker, BrokerError};
use serde::{Deserialize, Serialize};

use super::runtime::Alerts;
use crate::cluster::{AUTH_HEADER, CONNECT_TIMEOUT, PeerAuth};
use crate::fanout::subscription_figures::{LedFigures, led, summed, take};

/// Where a node answers the evaluator's [`FiguresAsk`] on its cluster port.
pub(crate) const ALERT_FIGURES_PATH: &str = "/cluster/v1/alerts/figures";
/// Longest the evaluator waits for one node's figures: a node answers from memory and its
/// own leases in milliseconds; a node that takes a second is stalled, and the tick goes on
/// with the evaluator's own copy of its partitions rather than wait for it.
pub(crate) const FIGURES_TIMEOUT_MS: u64 = 1_000;

/// What the evaluator asks every node for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FiguresAsk {
    /// The topics whose subscriptions some rule watches.
    pub topics: Vec<String>,
    /// The scopes of `produce_errors` rules: a topic, or `None` for every topic.
    pub produce_scopes: Vec<Option<String>>,
}

/// One node's answer to a [`FiguresAsk`].
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct NodeFigures {
    /// Per topic asked that the node has open: its figures.
    pub topics: Vec<TopicAnswer>,
    /// Per produce scope asked: failed produce requests the node counted since it started.
    pub produce_errors: Vec<(Option<String>, u64)>,
    /// The used share of the node's data disk, if it can be asked.
    pub disk_share: Option<f64>,
    /// The node's synthetic probe, once a round has finished there (absent from nodes of
    /// an earlier version).
    #[serde(default)]
    pub probe: Option<ProbeFigures>,
}

/// One node's synthetic probe, as it answers the evaluator.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProbeFigures {
    /// Rounds failed in a row (0 after a success).
    pub failures: u64,
    /// Ms since the first of those failures, while failing.
    pub failing_for_ms: Option<u64>,
}

/// One topic in [`NodeFigures`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TopicAnswer {
    /// The topic.
    pub topic: String,
    /// Its subscriptions' figures on the partitions the node leads.
    pub led: LedFigures,
    /// Per subscription received from on this node since it started: ms since the last
    /// receive (or open stream) there.
    pub quiet_ms: Vec<(String, u64)>,
}

/// This node's answer to `ask`. A topic the node does not have open is left out.
pub(crate) async fn node_figures(
    broker: &Broker,
    alerts: &Alerts,
    ask: &FiguresAsk,
) -> NodeFigures {
    let now = steady_ms();
    let mut topics = Vec::new();
    for topic in &ask.topics {
        let Ok(figures) = broker.subscription_figures(topic, FiguresOf::All).await else {
            continue;
        };
        let quiet_ms = figures
            .subscriptions
            .iter()
            .filter_map(|s| {
                let last = broker.last_receive_ms(topic, &s.config.name).ok()??;
                Some((s.config.name.clone(), now.saturating_sub(last)))
            })
            .collect();
        topics.push(TopicAnswer {
            topic: topic.clone(),
            led: led(&figures),
            quiet_ms,
        });
    }
    NodeFigures {
        topics,
        produce_errors: ask
            .produce_scopes
            .iter()
            .map(|scope| {
                (
                    scope.clone(),
                    alerts.produce_errors().total(scope.as_deref()),
                )
            })
            .collect(),
        disk_share: broker.used_disk_share(),
        probe: alerts.probe().failures().map(|failures| ProbeFigures {
            failures,
            failing_for_ms: alerts
                .probe()
                .failing_since_ms()
                .map(|since| now.saturating_sub(since)),
        }),
    }
}

/// Calls other nodes' cluster ports for their figures, proved with the cluster secret.
#[derive(Debug, Clone)]
pub struct FiguresClient {
    auth: PeerAuth,
    http: reqwest::Client,
}

impl FiguresClient {
    /// A client proving calls with `auth`.
    pub fn new(auth: PeerAuth) -> reqwest::Result<FiguresClient> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(Duration::from_millis(FIGURES_TIMEOUT_MS))
            .build()?;
        Ok(FiguresClient { auth, http })
    }

    /// Node `node`'s figures, `None` (logged) if it cannot be asked or does not answer.
    async fn ask(
        &self,
        cluster: &ClusterNode,
        node: u64,
        address: &str,
        ask: &FiguresAsk,
    ) -> Option<NodeFigures> {
        let proof = self
            .auth
            .sign(cluster.node_id(), broker_core::clock::now_ms());
        let sent = self
            .http
            .post(format!("http://{address}{ALERT_FIGURES_PATH}"))
            .header(AUTH_HEADER, proof)
            .json(ask)
            .send()
            .await;
        let answer = match sent {
            Ok(answer) if answer.status().is_success() => answer.json::<NodeFigures>().await,
            Ok(answer) => {
                tracing::debug!(node, status = %answer.status(), "a node refused its alert figures");
                return None;
            }
            Err(error) => Err(error),
        };
        answer
            .map_err(|error| tracing::debug!(node, %error, "a node's alert figures did not come"))
            .ok()
    }
}

/// One topic's subscriptions as gathered.
#[derive(Debug, Default)]
struct GatheredTopic {
    stats: BTreeMap<String, SubscriptionStats>,
    quiet_ms: BTreeMap<String, u64>,
}

/// One topic merged: this node's own copy of every partition (`figures`), those another node
/// leads replaced with that leader's figures (the first answer naming a partition wins, so a
/// partition two nodes claim across a leader change is counted once), and per subscription
/// the least quiet time any node reported.
fn merge_topic(mut figures: TopicFigures, answers: &[&TopicAnswer]) -> GatheredTopic {
    let mut taken: Vec<bool> = figures.served.clone();
    let mut quiet_ms: BTreeMap<String, u64> = BTreeMap::new();
    for there in answers {
        let partitions: Vec<u32> = there
            .led
            .delayed
            .iter()
            .map(|(p, _)| *p)
            .filter(|p| taken.get(*p as usize).is_some_and(|t| !t))
            .collect();
        take(&mut figures, &there.led, &partitions);
        for p in &partitions {
            if let Some(slot) = taken.get_mut(*p as usize) {
                *slot = true;
            }
        }
        for (name, quiet) in &there.quiet_ms {
            let least = quiet_ms.entry(name.clone()).or_insert(*quiet);
            *least = (*least).min(*quiet);
        }
    }
    GatheredTopic {
        stats: summed(figures)
            .into_iter()
            .map(|info| (info.config.name, info.stats))
            .collect(),
        quiet_ms,
    }
}

/// Every node's figures merged, as of one tick.
#[derive(Debug, Default)]
pub struct ClusterFigures {
    topics: BTreeMap<String, GatheredTopic>,
    produce_errors: BTreeMap<Option<String>, u64>,
    disk_share: Option<f64>,
    /// Each answering node's probe, by node id.
    probes: BTreeMap<u64, ProbeFigures>,
    /// The other nodes asked that gave no answer.
    silent: Vec<u64>,
    /// Steady ms (this node's clock) at which the figures were gathered.
    at_ms: u64,
}

impl ClusterFigures {
    /// Asks every other node in the metadata for its figures at once (each within
    /// [`FIGURES_TIMEOUT_MS`]) and merges them with this node's.
    pub async fn gather(
        cluster: &Arc<ClusterNode>,
        client: &FiguresClient,
        broker: &Broker,
        alerts: &Alerts,
        ask: &FiguresAsk,
    ) -> ClusterFigures {
        let me = cluster.node_id();
        let others: Vec<(u64, String)> = cluster
            .state()
            .nodes()
            .values()
            .filter(|n| n.id != me)
            .map(|n| (n.id, n.cluster_addr.clone()))
            .collect();
        let calls = others.iter().map(|(node, address)| async move {
            let answer = client.ask(cluster, *node, address, ask).await;
            answer.map(|answer| (*node, answer))
        });
        let answered: Vec<(u64, NodeFigures)> = futures_util::future::join_all(calls)
            .await
            .into_iter()
            .flatten()
            .collect();
        let at_ms = steady_ms();
        let mine = node_figures(broker, alerts, ask).await;
        let mut probes: BTreeMap<u64, ProbeFigures> = answered
            .iter()
            .filter_map(|(node, answer)| answer.probe.map(|p| (*node, p)))
            .collect();
        if let Some(own) = mine.probe {
            probes.insert(me, own);
        }
        let silent = others
            .iter()
            .map(|(node, _)| *node)
            .filter(|node| answered.iter().all(|(n, _)| n != node))
            .collect();
        let answers: Vec<NodeFigures> = answered.into_iter().map(|(_, a)| a).collect();
        let mut gathered = ClusterFigures {
            at_ms,
            probes,
            silent,
            ..ClusterFigures::default()
        };
        for topic in &ask.topics {
            let Ok(figures) = broker.subscription_figures(topic, FiguresOf::All).await else {
                continue;
            };
            let there: Vec<&TopicAnswer> = answers
                .iter()
                .chain(std::iter::once(&mine))
                .filter_map(|answer| answer.topics.iter().find(|t| &t.topic == topic))
                .collect();
            let entry = merge_topic(figures, &there);
            gathered.topics.insert(topic.clone(), entry);
        }
        for answer in answers.iter().chain(std::iter::once(&mine)) {
            for (scope, count) in &answer.produce_errors {
                *gathered.produce_errors.entry(scope.clone()).or_default() += count;
            }
            if let Some(share) = answer.disk_share {
                gathered.disk_share = Some(gathered.disk_share.map_or(share, |s| s.max(share)));
            }
        }
        gathered
    }

    fn topic(&self, topic: &str) -> Result<&GatheredTopic, BrokerError> {
        self.topics
            .get(topic)
            .ok_or_else(|| BrokerError::TopicNotFound {
                topic: topic.to_owned(),
            })
    }

    /// A subscription's stats summed over its partitions' leaders.
    pub fn subscription(&self, topic: &str, name: &str) -> Result<SubscriptionStats, BrokerError> {
        self.topic(topic)?.stats.get(name).cloned().ok_or_else(|| {
            BrokerError::SubscriptionNotFound {
                topic: topic.to_owned(),
                subscription: name.to_owned(),
            }
        })
    }

    /// Every subscription of a topic, its stats summed over the partitions' leaders.
    pub fn subscriptions(&self, topic: &str) -> Result<Vec<SubscriptionStats>, BrokerError> {
        Ok(self.topic(topic)?.stats.values().cloned().collect())
    }

    /// Steady ms (this node's clock) of the most recent receive from a subscription on any
    /// node that answered, `None` if none did since it started.
    pub fn last_receive_ms(&self, topic: &str, name: &str) -> Result<Option<u64>, BrokerError> {
        let quiet = self.topic(topic)?.quiet_ms.get(name).copied();
        Ok(quiet.map(|q| self.at_ms.saturating_sub(q)))
    }

    /// Failed produce requests of a scope asked for, summed over the nodes that answered.
    pub fn produce_errors(&self, scope: Option<&str>) -> u64 {
        self.produce_errors
            .get(&scope.map(str::to_owned))
            .copied()
            .unwrap_or(0)
    }

    /// The fullest disk among the nodes that answered.
    pub fn disk_share(&self) -> Option<f64> {
        self.disk_share
    }

    /// The most probe failures in a row of any node that answered, `None` while none has
    /// finished a round.
    pub fn probe_failures(&self) -> Option<u64> {
        self.probes.values().map(|p| p.failures).max()
    }

    /// While some node's probe fails: steady ms (this node's clock) since the earliest of
    /// their failures in a row began, and those nodes.
    pub fn probe_failing(&self) -> Option<(u64, Vec<u64>)> {
        let failing: Vec<(u64, u64)> = self
            .probes
            .iter()
            .filter(|(_, p)| p.failures > 0)
            .map(|(node, p)| (*node, p.failing_for_ms.unwrap_or(0)))
            .collect();
        let longest = failing.iter().map(|(_, ms)| *ms).max()?;
        let nodes = failing.into_iter().map(|(node, _)| node).collect();
        Some((self.at_ms.saturating_sub(longest), nodes))
    }
}

/// The nodes that left the evaluator's asks unanswered, each since when and how many asks
/// in a row: a node that cannot even answer (stopped, cut off, stalled past
/// [`FIGURES_TIMEOUT_MS`]) cannot run its probe either, so while probes are on it counts as
/// a failing probe, its failures the asks it left unanswered in a row.
#[derive(Debug, Default)]
pub(crate) struct SilentNodes {
    /// Per silent node: steady ms (this node's clock) of the first unanswered ask of the
    /// run, and the asks unanswered since.
    since: BTreeMap<u64, (u64, u64)>,
}

impl SilentNodes {
    /// Notes one gather at steady `at_ms` in which `silent` gave no answer (every other
    /// node asked did), and returns each silent node's probe as the evaluator counts it.
    pub(crate) fn observe(&mut self, silent: &[u64], at_ms: u64) -> BTreeMap<u64, ProbeFigures> {
        self.since.retain(|node, _| silent.contains(node));
        silent
            .iter()
            .map(|node| {
                let (first, asks) = self.since.entry(*node).or_insert((at_ms, 0));
                *asks += 1;
                let figures = ProbeFigures {
                    failures: *asks,
                    failing_for_ms: Some(at_ms.saturating_sub(*first)),
                };
                (*node, figures)
            })
            .collect()
    }
}

/// A cluster node's part in alerts: whether it evaluates, and how it gathers.
pub struct Clustered {
    node: Arc<ClusterNode>,
    client: FiguresClient,
    silent: std::sync::Mutex<SilentNodes>,
}

impl std::fmt::Debug for Clustered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clustered")
            .field("node", &self.node.node_id())
            .finish_non_exhaustive()
    }
}

impl Clustered {
    /// The alerts part of cluster node `node`, asking other nodes with `client`.
    pub fn new(node: Arc<ClusterNode>, client: FiguresClient) -> Clustered {
        Clustered {
            node,
            client,
            silent: std::sync::Mutex::default(),
        }
    }

    /// The cluster node.
    pub fn node(&self) -> &Arc<ClusterNode> {
        &self.node
    }

    /// Whether this node evaluates the rules and sends their webhooks: it leads the
    /// controller group, so at most one node does in a steady cluster.
    pub fn evaluates(&self) -> bool {
        self.node.controller_leader() == Some(self.node.node_id())
    }

    /// Every node's figures for `ask`, merged ([`ClusterFigures::gather`]); while probes
    /// are on, a node that did not answer counts as a failing probe ([`SilentNodes`]).
    pub async fn gather(
        &self,
        broker: &Broker,
        alerts: &Alerts,
        ask: &FiguresAsk,
    ) -> ClusterFigures {
        let mut figures =
            ClusterFigures::gather(&self.node, &self.client, broker, alerts, ask).await;
        let silent = broker_core::sync::lock(&self.silent).observe(&figures.silent, figures.at_ms);
        if alerts.probe().status().interval_ms > 0 {
            figures.probes.extend(silent);
        }
        figures
    }
}

#[cfg(test)]
mod tests;
