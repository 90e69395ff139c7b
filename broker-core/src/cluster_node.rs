//! [`ClusterNode`]: one node of a Wharf cluster at run time.
//!
//! It runs this node's replica of the controller group over [`ClusterState`], registers the
//! node in it, and keeps the broker in step with it: a reconciler wakes on every applied
//! command and materializes the topics placed here (their partitions' groups formed with the
//! placement's members) or deletes those the metadata no longer has. Topic administration in
//! a cluster goes through it: the controller leader validates and places a topic, proposes
//! it, and answers once this node serves it; any other node answers
//! [`BrokerError::NotLeader`] naming the controller leader (the gateway forwards there).
//!
//! Subscriptions are created and deleted the same way; each node opens those of the topics
//! it holds (see `broker::live_tables` for how their partitions are served).
//!
//! Alert rules (the gateway's, opaque here) are cluster metadata too, stored and forgotten
//! through the controller leader ([`ClusterNode::create_alert_rule`]).
//!
//! Cluster administration (`admin`): moving a partition's leadership, rebalancing leaders,
//! draining and removing nodes, all run at the controller leader.
//!
//! Every node opens every topic and starts the groups of the partitions placed on it; each
//! partition's leader reports itself to the controller ([`Command::SetPartitionLeader`]),
//! so that the nodes outside its group know where to forward (see `broker::cluster`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::broker::SubscriptionInfo;
use crate::broker::{Broker, PartitionHint, PlacedPartition};
use crate::cluster::{
    ClusterState, Command, NodeRecord, PlacementLoad, TopicRecord, encode_command, place,
    place_led_by,
};
use crate::config::LogConfig;
use crate::error::{BrokerError, Result};
use crate::raft::{
    ControllerReplica, GroupId, GroupStatus, NodeInfo, ProposeAnswer, ProposeRefusal, ReplicaSpec,
    Replication, Rpc, RpcCall, propose_command,
};
use crate::subscription::SubscriptionSpec;
use crate::topic::{TopicInfo, TopicSpec};

mod admin;
mod lead_back;
pub use admin::{DrainReport, FailedMove, LeaderMoved, RebalanceReport};

/// How long an admin request waits for this node to serve what it asked for (the command
/// committed, the reconciler done): a topic's groups form within an election timeout or two.
pub const ADMIN_WAIT_MS: u64 = 10_000;
/// Pause between attempts to register this node while the controller has no leader.
const REGISTER_RETRY_MS: u64 = 250;
/// How often a node looks for leaderships of its own the metadata does not record yet: a
/// couple of heartbeats, a small part of the outage a new leader's election already costs
/// the nodes that forward to it.
const LEADER_REPORT_MS: u64 = 100;
/// How often a node looks for replicas the metadata moved off it that it still holds: the
/// move's last step (the new configuration committing) follows the placement change, with
/// no metadata command to wake the reconciler; half a second keeps a moved replica's files
/// briefly at the cost of one metadata scan (in memory).
const RELEASE_CHECK_MS: u64 = 500;
/// How long one proposal relayed to the controller leader may take.
const RELAY_TIMEOUT_MS: u64 = 6_000;
/// Most voters the controller leader grows the controller group to as nodes join (later
/// nodes stay learners, still following the metadata): a Raft group of more voters only
/// slows every commit.
pub const MAX_CONTROLLER_VOTERS: usize = 7;
/// How often the controller's membership is checked when no command is applied: a leader
/// elected after a node registered adds it within this.
const MEMBERSHIP_CHECK_MS: u64 = 1_000;

/// One node of a cluster: the controller replica, the node's record, the broker it steers.
pub struct ClusterNode {
    me: NodeRecord,
    broker: Arc<Broker>,
    replication: Replication,
    controller: ControllerReplica<ClusterState>,
    /// The other nodes named at start: where a node that knows no controller leader (one
    /// joining) relays its registration.
    peers: Vec<u64>,
    /// Held while the controller leader adds joined nodes to the controller's voters.
    growing: Arc<tokio::sync::Mutex<()>>,
    /// Whether the metadata has held this start's registration (see `reconcile`): it has
    /// caught up with everything committed before this process started.
    caught_up: AtomicBool,
}

/// Where and who a node is.
pub struct NodeStart {
    /// This node's record (id, zone, addresses).
    pub me: NodeRecord,
    /// The initial voters of the controller group, this node among them.
    pub voters: BTreeMap<u64, NodeInfo>,
    /// The controller log's directory.
    pub controller_dir: PathBuf,
    /// The controller log's settings.
    pub log_config: LogConfig,
    /// Whether this node joins a running cluster: it does not form the controller group with
    /// `voters` (they name nodes to reach); the controller leader adds it as a learner once it
    /// registers, then as a voter once it caught up.
    pub join: bool,
}

impl ClusterNode {
    /// Opens this node's controller replica, forms the controller group with `start.voters`
    /// if it is brand new (unless it joins a running cluster), and starts registering the
    /// node and reconciling the broker.
    pub async fn start(broker: Arc<Broker>, start: NodeStart) -> Result<Arc<ClusterNode>> {
        let replication = broker
            .replication_settings()
            .cloned()
            .ok_or_else(|| BrokerError::invalid("cluster", "the broker does not replicate"))?;
        let spec = ReplicaSpec {
            node_id: replication.node_id,
            group: GroupId::Controller,
            dir: start.controller_dir,
            index: broker.controller_index()?,
            log_config: start.log_config,
            on_commit: Arc::new(tokio::sync::Notify::new()),
        };
        let controller = ControllerReplica::open(
            spec,
            Arc::clone(&replication.transport),
            Arc::clone(&replication.raft),
            ClusterState::new(),
        )
        .await?;
        replication
            .groups
            .insert(GroupId::Controller, controller.raft.clone());
        let peers = start
            .voters
            .keys()
            .copied()
            .filter(|id| *id != start.me.id)
            .collect();
        if !start.join
            && let Err(e) = controller.raft.initialize(start.voters).await
        {
            tracing::debug!(error = %e, "the controller group was formed before");
        }
        // Behind until the metadata holds this start's registration (see `reconcile`).
        broker.set_metadata_behind(true);
        let node = Arc::new(ClusterNode {
            me: start.me,
            broker,
            replication,
            controller,
            peers,
            growing: Arc::new(tokio::sync::Mutex::new(())),
            caught_up: AtomicBool::new(false),
        });
        tokio::spawn(register(Arc::downgrade(&node)));
        tokio::spawn(reconcile_loop(Arc::downgrade(&node)));
        tokio::spawn(membership_loop(Arc::downgrade(&node)));
        tokio::spawn(report_leaders_loop(Arc::downgrade(&node)));
        tokio::spawn(release_loop(Arc::downgrade(&node)));
        Ok(node)
    }

    /// The broker this node steers.
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// The leader of a topic's partition, as this node knows it.
    pub fn broker_leader(&self, topic: &str, partition: u32) -> Option<u64> {
        self.broker.partition_leader(topic, partition)
    }

    /// This node's id.
    pub fn node_id(&self) -> u64 {
        self.replication.node_id
    }

    /// A copy of the cluster metadata as this node has applied it.
    pub fn state(&self) -> ClusterState {
        self.controller.machine.read(ClusterState::clone)
    }

    /// The public address of node `node`, as the metadata records it (read in place: the
    /// forwarding of a request asks this, and copying the whole metadata would not do).
    pub fn public_addr(&self, node: u64) -> Option<String> {
        self.controller
            .machine
            .read(|s| s.node(node).map(|n| n.public_addr.clone()))
    }

    /// The controller leader, as this node knows it.
    pub fn controller_leader(&self) -> Option<u64> {
        self.controller.raft.metrics().borrow().current_leader
    }

    /// The controller group as this node sees it.
    pub fn controller_status(&self) -> GroupStatus {
        GroupStatus::of(&self.controller.raft)
    }

    /// The controller group's voters.
    fn voters(&self) -> u32 {
        let metrics = self.controller.raft.metrics();
        let metrics = metrics.borrow();
        metrics.membership_config.membership().voter_ids().count() as u32
    }

    /// Whether the node serves: the controller has a leader and the metadata holds this
    /// node's registration as it is now, so it has caught up with everything committed
    /// before this start.
    pub fn ready(&self) -> bool {
        self.controller_leader().is_some()
            && (self.caught_up.load(Ordering::SeqCst)
                || self
                    .controller
                    .machine
                    .read(|s| s.node(self.me.id) == Some(&self.me)))
    }

    fn not_controller_leader(&self) -> BrokerError {
        BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader: self.controller_leader(),
        }
    }

    /// Creates a topic through the controller (this node must lead it): validated against the
    /// metadata, placed, proposed, and answered once this node serves it.
    pub async fn create_topic(&self, spec: TopicSpec) -> Result<TopicInfo> {
        self.create_placed(spec, None).await
    }

    /// As [`ClusterNode::create_topic`], for a topic of one partition that belongs to node
    /// `leader` (its synthetic probe's): `leader` holds a replica and is its preferred leader.
    pub async fn create_topic_led_by(&self, spec: TopicSpec, leader: u64) -> Result<TopicInfo> {
        self.create_placed(spec, Some(leader)).await
    }

    async fn create_placed(&self, spec: TopicSpec, leader: Option<u64>) -> Result<TopicInfo> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        let state = self.state();
        let active = state.active_nodes();
        let nodes = active.len() as u32;
        let voters = self.voters();
        if nodes < voters {
            // A topic placed before every voter registered would leave some out for good.
            return Err(BrokerError::NotLeader {
                what: format!("cluster metadata ({nodes} of {voters} nodes registered)"),
                leader: None,
            });
        }
        let uid = rand::random::<u64>();
        let config = spec.into_config_keeping(crate::clock::now_ms(), uid, nodes)?;
        if state.topic(&config.name).is_some() {
            return Err(BrokerError::TopicExists { topic: config.name });
        }
        let factor = config.replication_factor;
        let load = PlacementLoad::of(&state);
        let placement = match leader {
            None => place(&active, &load, config.partitions, factor),
            Some(_) if config.partitions != 1 => {
                return Err(BrokerError::invalid(
                    "partitions",
                    "a topic led by one node has one partition",
                ));
            }
            Some(node) => place_led_by(&active, &load, factor, node).map(|p| vec![p]),
        }
        .map_err(|e| BrokerError::invalid("replication_factor", e.to_string()))?;
        let name = config.name.clone();
        let command = Command::CreateTopic(TopicRecord { config, placement });
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || self.broker.topic_uid(&name) == Some(uid))
            .await?;
        // Answer once every partition has a leader, so a produce right after the create
        // finds one; a group still electing after the wait is reported as leaderless.
        let partitions = self
            .state()
            .topic(&name)
            .map_or(0, |t| t.placement.len() as u32);
        let led = || (0..partitions).all(|p| self.broker.partition_leader(&name, p).is_some());
        if self.wait_for(ADMIN_WAIT_MS, led).await.is_err() {
            tracing::warn!(topic = %name, "a partition of a new topic has no leader yet");
        }
        self.broker.describe_topic(&name)
    }

    /// Deletes a topic through the controller (this node must lead it), answered once this
    /// node no longer serves it.
    pub async fn delete_topic(&self, name: &str) -> Result<()> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        if self.state().topic(name).is_none() {
            return Err(BrokerError::TopicNotFound { topic: name.into() });
        }
        self.propose(&Command::DeleteTopic { name: name.into() })
            .await?;
        self.wait_for(ADMIN_WAIT_MS, || self.broker.topic_uid(name).is_none())
            .await
    }

    /// Creates a subscription through the controller (this node must lead it), and its
    /// dead-letter topic when the metadata has none (with at least as many partitions as
    /// nodes, so that most nodes lead one of them: a node moves dead letters only to a
    /// dead-letter partition it leads). Answered once this node has it open and every
    /// partition's leader has given it its start.
    pub async fn create_subscription(
        &self,
        topic: &str,
        spec: SubscriptionSpec,
    ) -> Result<SubscriptionInfo> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        let state = self.state();
        let Some(source) = state.topic(topic) else {
            return Err(BrokerError::TopicNotFound {
                topic: topic.to_owned(),
            });
        };
        let uid = rand::random::<u64>();
        let config = spec.into_config(topic, crate::clock::now_ms(), uid)?;
        if state.subscription(topic, &config.name).is_some() {
            return Err(BrokerError::SubscriptionExists {
                topic: topic.to_owned(),
                subscription: config.name,
            });
        }
        if state.topic(&config.dead_letter_topic).is_none() {
            let nodes = state.active_nodes().len() as u32;
            let dead_letters = TopicSpec {
                name: config.dead_letter_topic.clone(),
                partitions: Some(source.config.partitions.max(nodes)),
                max_message_bytes: Some(source.config.max_message_bytes),
                // An internal topic's subscription may name an internal dead-letter topic.
                internal: crate::names::is_internal(&config.dead_letter_topic),
                ..TopicSpec::default()
            };
            match self.create_topic(dead_letters).await {
                Ok(_) | Err(BrokerError::TopicExists { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        let name = config.name.clone();
        self.propose(&Command::CreateSubscription(config)).await?;
        self.wait_for(ADMIN_WAIT_MS, || {
            self.broker.subscription_uid(topic, &name) == Some(uid)
        })
        .await?;
        self.broker
            .wait_subscription_started(topic, &name, uid, ADMIN_WAIT_MS)
            .await?;
        self.broker.describe_subscription(topic, &name).await
    }

    /// Deletes a subscription through the controller (this node must lead it), answered once
    /// this node no longer has it.
    pub async fn delete_subscription(&self, topic: &str, name: &str) -> Result<()> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        let state = self.state();
        if state.topic(topic).is_none() {
            return Err(BrokerError::TopicNotFound {
                topic: topic.to_owned(),
            });
        }
        if state.subscription(topic, name).is_none() {
            return Err(BrokerError::SubscriptionNotFound {
                topic: topic.to_owned(),
                subscription: name.to_owned(),
            });
        }
        let command = Command::DeleteSubscription {
            topic: topic.to_owned(),
            name: name.to_owned(),
        };
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || {
            self.broker.subscription_uid(topic, name).is_none()
        })
        .await
    }

    /// Every alert rule in the metadata, `(name, encoded rule)` in name order, as this node
    /// has applied it.
    pub fn alert_rules(&self) -> Vec<(String, String)> {
        self.controller.machine.read(|state| {
            state
                .alert_rules()
                .iter()
                .map(|(name, rule)| (name.clone(), rule.clone()))
                .collect()
        })
    }

    /// Stores a new alert rule through the controller (this node must lead it), answered
    /// once this node has applied it: `false` (nothing proposed) if a rule of that name
    /// exists. `rule` is opaque to the broker.
    pub async fn create_alert_rule(&self, name: &str, rule: String) -> Result<bool> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        if self.state_has_alert_rule(name) {
            return Ok(false);
        }
        let command = Command::PutAlertRule {
            name: name.to_owned(),
            rule,
        };
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || self.state_has_alert_rule(name))
            .await?;
        Ok(true)
    }

    /// Forgets an alert rule through the controller (this node must lead it), answered once
    /// this node has applied it: `false` (nothing proposed) if there is none.
    pub async fn delete_alert_rule(&self, name: &str) -> Result<bool> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        if !self.state_has_alert_rule(name) {
            return Ok(false);
        }
        let command = Command::DeleteAlertRule {
            name: name.to_owned(),
        };
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || !self.state_has_alert_rule(name))
            .await?;
        Ok(true)
    }

    fn state_has_alert_rule(&self, name: &str) -> bool {
        self.controller
            .machine
            .read(|state| state.alert_rule(name).is_some())
    }

    async fn propose(&self, command: &Command) -> Result<()> {
        match propose_command(&self.controller.raft, encode_command(command)?).await {
            Ok(()) => Ok(()),
            Err(refusal) => Err(refusal_error(refusal)),
        }
    }

    async fn wait_for(&self, ms: u64, done: impl Fn() -> bool) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
        while !done() {
            if tokio::time::Instant::now() >= deadline {
                return Err(BrokerError::ReplicationTimeout {
                    what: "cluster metadata".into(),
                    ms,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }

    /// Proposes `command` at the controller leader, wherever it is. A node that knows no
    /// leader (an election, or a node joining that is no member yet) asks the peers it was
    /// started with, following the leader one of them names.
    async fn propose_anywhere(&self, command: &Command) -> Result<()> {
        match self.controller_leader() {
            Some(leader) if leader == self.node_id() => self.propose(command).await,
            Some(leader) => self.relay(leader, command).await,
            None => {
                for peer in &self.peers {
                    let leader = match self.relay_answer(*peer, command).await {
                        Ok(Ok(())) => return Ok(()),
                        Ok(Err(ProposeRefusal::LeaderAt {
                            leader,
                            cluster_addr,
                        })) => {
                            // A joining node learns the leader's address here first.
                            self.replication.transport.learn(leader, &cluster_addr);
                            leader
                        }
                        Ok(Err(ProposeRefusal::NotLeader(Some(leader)))) => leader,
                        Ok(Err(refusal)) => {
                            tracing::debug!(peer, ?refusal, "no controller leader there");
                            continue;
                        }
                        Err(error) => {
                            tracing::debug!(peer, %error, "no controller leader there");
                            continue;
                        }
                    };
                    if leader != *peer {
                        return self.relay(leader, command).await;
                    }
                }
                Err(self.not_controller_leader())
            }
        }
    }

    /// Sends `command` to node `target`, to propose as the controller leader.
    async fn relay(&self, target: u64, command: &Command) -> Result<()> {
        self.relay_answer(target, command)
            .await?
            .map_err(refusal_error)
    }

    /// [`ClusterNode::relay`]'s answer as node `target` gave it.
    async fn relay_answer(&self, target: u64, command: &Command) -> Result<ProposeAnswer> {
        let call = RpcCall {
            group: GroupId::Controller,
            rpc: Rpc::Propose,
            body: encode_command(command)?,
            timeout: Duration::from_millis(RELAY_TIMEOUT_MS),
        };
        let answer = self
            .replication
            .transport
            .call(target, call)
            .await
            .map_err(|e| BrokerError::invalid("controller", e.to_string()))?;
        serde_json::from_slice(&answer)
            .map_err(|e| BrokerError::invalid("controller", e.to_string()))
    }

    /// Tells the transport every node's cluster address in the metadata (a node that joined
    /// after this one started), and on the controller leader makes every active node that is
    /// not a voter of the controller group one (a learner first, then a voter), up to
    /// [`MAX_CONTROLLER_VOTERS`], in the background, one round at a time.
    fn follow_membership(self: &Arc<Self>) {
        let voters = self.controller.voters();
        let leads = self.controller_leader() == Some(self.node_id());
        let room = MAX_CONTROLLER_VOTERS.saturating_sub(voters.len());
        let joining: Vec<NodeRecord> = self.controller.machine.read(|state| {
            for node in state.nodes().values() {
                self.replication
                    .transport
                    .learn(node.id, &node.cluster_addr);
            }
            match leads {
                false => Vec::new(),
                true => state
                    .active_nodes()
                    .into_iter()
                    .filter(|n| !voters.contains(&n.id))
                    .take(room)
                    .collect(),
            }
        });
        if joining.is_empty() {
            return;
        }
        let Ok(round) = Arc::clone(&self.growing).try_lock_owned() else {
            return;
        };
        let node = Arc::clone(self);
        tokio::spawn(async move {
            let _round = round;
            for joiner in joining {
                let info = NodeInfo {
                    cluster_addr: joiner.cluster_addr.clone(),
                    zone: joiner.zone.clone(),
                };
                match node.controller.add_voter(joiner.id, info).await {
                    Ok(()) => {
                        tracing::info!(
                            node = joiner.id,
                            "a joined node votes on the cluster metadata"
                        );
                    }
                    Err(error) => {
                        tracing::warn!(node = joiner.id, %error, "a joined node is not a voter yet; will retry");
                    }
                }
            }
        });
    }

    /// Brings the broker in line with the metadata: opens the topics placed here, deletes
    /// the topics the metadata no longer has.
    async fn reconcile(&self) {
        let state = self.state();
        // Deletions only once this process's own registration is applied: it was proposed
        // after the node started, so the metadata has then caught up with everything
        // committed before. Until then a restarted node's metadata is still being re-applied
        // from empty, and deleting what it does not list yet would destroy replicas.
        // Sticky: a later change of the record (a drain) does not make the metadata behind.
        let caught_up =
            self.caught_up.load(Ordering::SeqCst) || state.node(self.me.id) == Some(&self.me);
        self.caught_up.store(caught_up, Ordering::SeqCst);
        // Deletions first: a topic deleted and created again under the same name is a new
        // topic (another uid) whose files must not meet the old one's.
        for name in self.broker.topic_names().into_iter().filter(|_| caught_up) {
            let gone = match state.topic(&name) {
                None => true,
                Some(record) => self.broker.topic_uid(&name) != Some(record.config.uid),
            };
            if gone && let Err(error) = self.broker.delete_topic(&name).await {
                tracing::warn!(topic = %name, %error, "could not delete a topic");
            }
        }
        self.broker.set_node_zones(
            state
                .nodes()
                .values()
                .map(|n| (n.id, n.zone.clone()))
                .collect(),
        );
        // Every topic, placed here or not: a node holding none of a topic's partitions still
        // answers for it (forwarding to each partition's leader).
        for (name, record) in state.topics() {
            if let Err(error) = self
                .broker
                .materialize_placed_topic(
                    record.config.clone(),
                    replicas_of(&state, record),
                    &state.moved_partitions(name),
                )
                .await
            {
                tracing::warn!(topic = %name, %error, "could not open a topic");
            }
            let hints: Vec<PartitionHint> = (0u32..)
                .zip(&record.placement)
                .map(|(p, placed)| PartitionHint {
                    leader: state.partition_leader(name, p).map(|l| l.node),
                    replicas: placed.replicas.clone(),
                })
                .collect();
            self.broker
                .set_partition_hints(name, record.config.uid, &hints);
            self.reconcile_subscriptions(&state, name, caught_up).await;
        }
        // Only now: what the caught-up metadata lists is open here.
        self.broker.set_metadata_behind(!caught_up);
    }

    /// Reports to the controller each partition this node leads in a term the metadata
    /// does not record yet (see `broker::cluster`: the other nodes forward there).
    async fn report_leaders(&self) {
        let topics: Vec<(String, u64)> = self.controller.machine.read(|state| {
            state
                .topics()
                .iter()
                .map(|(name, record)| (name.clone(), record.config.uid))
                .collect()
        });
        let mut reports = Vec::new();
        for (name, uid) in topics {
            for (partition, term) in self.broker.led_partitions(&name, uid) {
                let recorded = self
                    .controller
                    .machine
                    .read(|state| state.partition_leader(&name, partition));
                if recorded.is_some_and(|l| l.node == self.node_id() && l.term >= term) {
                    continue;
                }
                reports.push(Command::SetPartitionLeader {
                    topic: name.clone(),
                    uid,
                    partition,
                    node: self.node_id(),
                    term,
                });
            }
        }
        for report in reports {
            if let Err(error) = self.propose_anywhere(&report).await {
                tracing::debug!(%error, "reporting a partition's leader; will retry");
            }
        }
    }

    /// Drops the replicas this node holds that the metadata places elsewhere, each once the
    /// partition's leader answers that its group left this node out
    /// ([`Broker::release_replica`]). Only once the metadata has caught up (`caught_up`, as
    /// for deletions).
    async fn release_moved_replicas(&self) {
        if !self.caught_up.load(Ordering::SeqCst) {
            return;
        }
        let state = self.state();
        let me = self.node_id();
        for (name, record) in state.topics() {
            for (partition, placed) in (0u32..).zip(&record.placement) {
                if placed.replicas.contains(&me) || !self.broker.holds_partition(name, partition) {
                    continue;
                }
                let released = self
                    .broker
                    .release_replica(name, record.config.uid, partition)
                    .await;
                if let Err(error) = released {
                    tracing::warn!(topic = %name, partition, %error, "could not drop a replica moved away");
                }
            }
        }
    }

    /// Brings a topic's subscriptions open here in line with the metadata.
    async fn reconcile_subscriptions(&self, state: &ClusterState, topic: &str, caught_up: bool) {
        for (name, uid) in self.broker.subscription_uids(topic) {
            let gone = state.subscription(topic, &name).map(|c| c.uid) != Some(uid);
            if gone
                && caught_up
                && let Err(error) = self.broker.delete_subscription(topic, &name).await
            {
                tracing::warn!(topic, subscription = %name, %error, "could not delete a subscription");
            }
        }
        for config in state.subscriptions(topic) {
            if self.broker.subscription_uid(topic, &config.name) == Some(config.uid) {
                continue;
            }
            if let Err(error) = self.broker.materialize_subscription(config.clone()).await {
                tracing::warn!(topic, subscription = %config.name, %error, "could not open a subscription");
            }
        }
    }

    /// Stops the controller replica.
    pub async fn shutdown(&self) {
        self.replication.groups.remove(&GroupId::Controller);
        self.controller.shutdown().await;
    }
}

/// Each partition's replicas, in partition order, with what the metadata knows of each.
fn replicas_of(state: &ClusterState, record: &TopicRecord) -> Vec<PlacedPartition> {
    record
        .placement
        .iter()
        .map(|p| PlacedPartition {
            members: p
                .replicas
                .iter()
                .map(|id| {
                    let info = state
                        .node(*id)
                        .map_or_else(NodeInfo::default, |n| NodeInfo {
                            cluster_addr: n.cluster_addr.clone(),
                            zone: n.zone.clone(),
                        });
                    (*id, info)
                })
                .collect(),
            preferred: p.preferred_leader(),
        })
        .collect()
}

fn refusal_error(refusal: ProposeRefusal) -> BrokerError {
    match refusal {
        ProposeRefusal::LeaderAt { leader, .. } => BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader: Some(leader),
        },
        ProposeRefusal::NotLeader(leader) => BrokerError::NotLeader {
            what: "cluster metadata".into(),
            leader,
        },
        ProposeRefusal::Timeout => BrokerError::ReplicationTimeout {
            what: "cluster metadata".into(),
            ms: crate::raft::PROPOSE_TIMEOUT_MS,
        },
        // Whatever failed (a stopped or panicked Raft answers `Timeout` already, see
        // `propose_command`), the caller cannot tell that nothing was written: 503 with the
        // outcome unknown, never a bad request.
        ProposeRefusal::Failed(reason) => BrokerError::ReplicationTimeout {
            what: format!("cluster metadata (its Raft failed: {reason})"),
            ms: crate::raft::PROPOSE_TIMEOUT_MS,
        },
    }
}

/// Registers the node until the metadata holds its record as it is now.
async fn register(node: Weak<ClusterNode>) {
    loop {
        let Some(node) = node.upgrade() else { return };
        let registered = node
            .controller
            .machine
            .read(|s| s.node(node.me.id) == Some(&node.me));
        if registered {
            return;
        }
        if let Err(error) = node
            .propose_anywhere(&Command::UpsertNode(node.me.clone()))
            .await
        {
            tracing::debug!(%error, "registering this node; will retry");
        }
        drop(node);
        tokio::time::sleep(Duration::from_millis(REGISTER_RETRY_MS)).await;
    }
}

/// [`ClusterNode::follow_membership`] after every applied command and every
/// [`MEMBERSHIP_CHECK_MS`] (a leader elected later, a failed round retried), until the node is
/// gone.
async fn membership_loop(node: Weak<ClusterNode>) {
    let mut version = match node.upgrade() {
        Some(node) => node.controller.machine.version(),
        None => return,
    };
    loop {
        match node.upgrade() {
            Some(node) => node.follow_membership(),
            None => return,
        }
        let tick = tokio::time::sleep(Duration::from_millis(MEMBERSHIP_CHECK_MS));
        tokio::select! {
            changed = version.changed() => if changed.is_err() { return },
            () = tick => {}
        }
    }
}

/// Reconciles after every applied command, until the node is gone.
async fn reconcile_loop(node: Weak<ClusterNode>) {
    let mut version = match node.upgrade() {
        Some(node) => node.controller.machine.version(),
        None => return,
    };
    loop {
        {
            let Some(node) = node.upgrade() else { return };
            node.reconcile().await;
        }
        if version.changed().await.is_err() {
            return;
        }
    }
}

/// Drops replicas moved off this node every [`RELEASE_CHECK_MS`], until the node is gone.
async fn release_loop(node: Weak<ClusterNode>) {
    loop {
        {
            let Some(node) = node.upgrade() else { return };
            node.release_moved_replicas().await;
        }
        tokio::time::sleep(Duration::from_millis(RELEASE_CHECK_MS)).await;
    }
}

/// Reports the partitions this node leads every [`LEADER_REPORT_MS`], until the node is gone.
async fn report_leaders_loop(node: Weak<ClusterNode>) {
    loop {
        {
            let Some(node) = node.upgrade() else { return };
            node.report_leaders().await;
        }
        tokio::time::sleep(Duration::from_millis(LEADER_REPORT_MS)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_controller_whose_raft_failed_answers_an_unknown_outcome_not_a_bad_request() {
        let failed = refusal_error(ProposeRefusal::Failed("the Raft core panicked".into()));
        assert!(
            matches!(failed, BrokerError::ReplicationTimeout { .. }),
            "{failed:?}"
        );
        let elsewhere = refusal_error(ProposeRefusal::NotLeader(Some(2)));
        assert!(
            matches!(
                elsewhere,
                BrokerError::NotLeader {
                    leader: Some(2),
                    ..
                }
            ),
            "{elsewhere:?}"
        );
    }
}
