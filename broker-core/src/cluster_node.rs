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
//! partition's leader reports itself to the controller
//! ([`crate::cluster::Command::SetPartitionLeader`]), so that the nodes outside its group know
//! where to forward (see `broker::cluster`).
//!
//! # Layout
//! - this file: [`ClusterNode`] and [`NodeStart`], starting a node (its controller replica
//!   and background tasks), and what it reads of the metadata and the controller group.
//! - `topics`: creating and deleting topics and subscriptions through the controller;
//!   `alert_rules`: the same for the gateway's alert rules.
//! - `proposals`: getting a command into the controller log, here or at its leader.
//! - `membership`: registering this node; growing the controller group's voters.
//! - `reconcile`: keeping the broker in step with the metadata, and dropping replicas moved
//!   away; `leader_reports`: reporting the partitions this node leads.
//! - `admin`: cluster administration; `lead_back`: what preferred-leader election needs.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::broker::Broker;
use crate::cluster::{ClusterState, NodeRecord};
use crate::config::LogConfig;
use crate::error::{BrokerError, Result};
use crate::raft::{ControllerReplica, GroupId, GroupStatus, NodeInfo, ReplicaSpec, Replication};

mod admin;
mod alert_rules;
mod lead_back;
mod leader_reports;
mod membership;
mod proposals;
mod reconcile;
mod topics;
pub use admin::{DrainReport, FailedMove, LeaderMoved, RebalanceReport};

use leader_reports::report_leaders_loop;
use membership::{membership_loop, register};
use reconcile::{reconcile_loop, release_loop};

/// How long an admin request waits for this node to serve what it asked for (the command
/// committed, the reconciler done): a topic's groups form within an election timeout or two.
pub const ADMIN_WAIT_MS: u64 = 10_000;
/// Most voters the controller leader grows the controller group to as nodes join (later
/// nodes stay learners, still following the metadata): a Raft group of more voters only
/// slows every commit.
pub const MAX_CONTROLLER_VOTERS: usize = 7;

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

    /// Stops the controller replica.
    pub async fn shutdown(&self) {
        self.replication.groups.remove(&GroupId::Controller);
        self.controller.shutdown().await;
    }
}
