//! Cluster administration at the controller leader: moving a partition's leadership,
//! rebalancing leaders, draining and removing a node.
//!
//! Every operation runs on the controller leader (any other node answers
//! [`BrokerError::NotLeader`] naming it, and the gateway forwards there), checks its input
//! against the metadata first (a dry run of the command on a copy of the state), and changes
//! nothing when it refuses. Draining a node moves its leaderships, then its replicas (see
//! `raft::membership`); a node a placement still names cannot be removed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use super::{ADMIN_WAIT_MS, ClusterNode};
use crate::cluster::{
    ClusterError, ClusterState, Command, LeaderMove, NodeState, plan_drain, plan_leader_balance,
};
use crate::error::{BrokerError, Result};
use crate::raft::{GroupId, MembershipStep, NodeInfo, TransferCoordinator, change_members};

/// Why a node a placement names cannot be removed, in words for the caller.
pub const REPLICAS_CANNOT_MOVE: &str =
    "replicas cannot move yet without a drain: drain the node first (POST .../drain)";

/// How long a replica move waits for the partition's new leader to be known here after its
/// leadership moved off the drained node (the new leader reports itself within about a
/// tenth of a second), before the drained node, if it still leads, does the move itself.
const LEADER_SETTLE_MS: u64 = 2_000;
/// Replica moves a drain runs at once (each waits for a learner to catch up).
const REPLICA_MOVES_AT_ONCE: usize = 8;

/// A partition's leadership after a move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderMoved {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The leader before the move, as the controller leader knew it (none: an election).
    pub from: Option<u64>,
    /// The leader now.
    pub leader: u64,
    /// Its term.
    pub term: u64,
    /// How long the move took, in milliseconds (0 when the node led already).
    pub took_ms: u64,
}

/// A planned move that did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedMove {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The node that was to lead it.
    pub to: u64,
    /// Why it did not.
    pub reason: String,
}

/// What a rebalance did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebalanceReport {
    /// The leaderships moved.
    pub moved: Vec<LeaderMoved>,
    /// The moves that failed.
    pub failed: Vec<FailedMove>,
}

/// What draining a node did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainReport {
    /// The node, now Draining.
    pub node: u64,
    /// The leaderships moved off it, and the moves that failed.
    pub leaders: RebalanceReport,
    /// Partitions whose placement still names the node (it keeps these replicas as a
    /// follower: replicas cannot move yet).
    pub replicas_kept: u32,
}

impl ClusterNode {
    /// Refuses with [`BrokerError::NotLeader`] unless this node leads the controller.
    fn lead_controller(&self) -> Result<()> {
        match self.controller_leader() == Some(self.node_id()) {
            true => Ok(()),
            false => Err(self.not_controller_leader()),
        }
    }

    /// Moves the leadership of `topic`'s partition `partition` to node `target`, answered
    /// once `target` leads it. Already leading: answered as it is.
    pub async fn move_leader(
        &self,
        topic: &str,
        partition: u32,
        target: u64,
    ) -> Result<LeaderMoved> {
        self.lead_controller()?;
        let state = self.state();
        let record = state
            .topic(topic)
            .ok_or_else(|| BrokerError::TopicNotFound {
                topic: topic.into(),
            })?;
        let placement = record.placement.get(partition as usize).ok_or_else(|| {
            BrokerError::PartitionNotFound {
                topic: topic.into(),
                partition,
                partitions: record.config.partitions,
            }
        })?;
        known_node(&state, target)?;
        if !placement.replicas.contains(&target) {
            return Err(BrokerError::NotAReplica {
                topic: topic.into(),
                partition,
                node: target,
            });
        }
        self.transfer(topic, partition, &placement.replicas, target)
            .await
    }

    /// Moves leaderships to where the placement wants them ([`plan_leader_balance`]), one
    /// after another; a failed move is reported and the others still run.
    pub async fn rebalance(&self) -> Result<RebalanceReport> {
        self.lead_controller()?;
        let state = self.state();
        let plan = plan_leader_balance(&state, &self.current_leaders(&state, |_| true));
        Ok(self.run_moves(&state, plan).await)
    }

    /// Marks node `id` Draining (it takes no new replicas) through the controller, moves the
    /// partition leaderships it holds to other replicas, then moves each of its replicas to
    /// another Active node ([`plan_drain`]): the new node joins the partition's group as a
    /// learner, catches up, and the voters become the new replica set. A move that fails is
    /// reported among the failed moves (its reason says so) and the node keeps that replica.
    pub async fn drain_node(&self, id: u64) -> Result<DrainReport> {
        self.lead_controller()?;
        let command = Command::DrainNode { id };
        self.state().apply(&command)?;
        self.propose(&command).await?;
        let drained = || self.state().node(id).is_some_and(|n| !n.is_active());
        self.wait_for(ADMIN_WAIT_MS, drained).await?;
        let state = self.state();
        let led_there = self.current_leaders(&state, |leader| leader == id);
        let plan = plan_leader_balance(&state, &led_there);
        let mut leaders = self.run_moves(&state, plan).await;
        leaders.failed.extend(self.move_replicas_off(id).await);
        let state = self.state();
        let replicas_kept = state
            .topics()
            .values()
            .flat_map(|t| &t.placement)
            .filter(|p| p.replicas.contains(&id))
            .count();
        Ok(DrainReport {
            node: id,
            leaders,
            replicas_kept: u32::try_from(replicas_kept).unwrap_or(u32::MAX),
        })
    }

    /// Cancels the drain of node `id`: it is Active again and may take replicas (its
    /// replicas moved away stay where they are; a later placement may bring them back).
    pub async fn undrain_node(&self, id: u64) -> Result<()> {
        self.lead_controller()?;
        let state = self.state();
        let mut record = state
            .node(id)
            .cloned()
            .ok_or(ClusterError::UnknownNode { node: id })?;
        record.state = NodeState::Active;
        let command = Command::UpsertNode(record);
        state.clone().apply(&command)?;
        self.propose(&command).await?;
        let active = || self.state().node(id).is_some_and(|n| n.is_active());
        self.wait_for(ADMIN_WAIT_MS, active).await
    }

    /// Removes node `id`: out of the controller's voters, then out of the metadata. Refused
    /// while a placement names it (drain it first), when it is the last node, or when the
    /// Active nodes left would be too few. A node cannot take itself out of the group it
    /// leads: asked to remove itself, the controller leader hands the leadership to another
    /// voter and answers [`BrokerError::NotLeader`] naming it, where a retry succeeds.
    pub async fn remove_node(&self, id: u64) -> Result<()> {
        self.lead_controller()?;
        let command = Command::RemoveNode { id };
        match self.state().apply(&command) {
            Err(refusal @ ClusterError::NodeStillHoldsReplicas { .. }) => {
                return Err(BrokerError::Cluster {
                    refusal,
                    note: Some(REPLICAS_CANNOT_MOVE),
                });
            }
            result => result?,
        }
        if id == self.node_id() {
            return Err(self.hand_over_controller().await);
        }
        // No round of adding joined nodes as voters meanwhile: one would see the node still
        // in the metadata but no voter any more, and make it a voter again.
        let _no_growth = self.growing.lock().await;
        self.controller.remove_voter(id).await?;
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || self.state().node(id).is_none())
            .await
    }

    /// Moves every replica of node `id` to another Active node (see [`Self::drain_node`]);
    /// returns the moves that failed.
    async fn move_replicas_off(&self, id: u64) -> Vec<FailedMove> {
        let state = self.state();
        let commands = plan_drain(&state, id);
        let mut failed = Vec::new();
        // Moves of different partitions are independent: a few at once, so draining a node
        // with many replicas answers within a request's time limit.
        for batch in commands.chunks(REPLICA_MOVES_AT_ONCE) {
            let moves = batch.iter().filter_map(|command| {
                let Command::SetPlacement {
                    topic,
                    partition,
                    replicas,
                } = command
                else {
                    return None;
                };
                let old = state
                    .topic(topic)
                    .and_then(|t| t.placement.get(*partition as usize))
                    .map(|p| p.replicas.clone())
                    .unwrap_or_default();
                let to = replicas
                    .iter()
                    .copied()
                    .find(|r| !old.contains(r))
                    .unwrap_or(id);
                Some(async move {
                    self.move_replica(id, command, topic, *partition, replicas)
                        .await
                        .err()
                        .map(|error| FailedMove {
                            topic: topic.clone(),
                            partition: *partition,
                            to,
                            reason: format!("replica move: {error}"),
                        })
                })
            });
            failed.extend(join_all(moves).await.into_iter().flatten());
        }
        failed
    }

    /// Replaces node `from` by the new node of `replicas` in the group of `topic`'s
    /// partition `partition`, then records `command` (its new placement).
    async fn move_replica(
        &self,
        from: u64,
        command: &Command,
        topic: &str,
        partition: u32,
        replicas: &[u64],
    ) -> Result<()> {
        let state = self.state();
        let old = state
            .topic(topic)
            .and_then(|t| t.placement.get(partition as usize))
            .map(|p| p.replicas.clone())
            .unwrap_or_default();
        let Some(target) = replicas.iter().copied().find(|r| !old.contains(r)) else {
            return Ok(());
        };
        let info = state
            .node(target)
            .map(|n| NodeInfo {
                cluster_addr: n.cluster_addr.clone(),
                zone: n.zone.clone(),
            })
            .unwrap_or_default();
        state.clone().apply(command)?;
        // The group's leader does the membership steps: the node that leads after the
        // leadership moves off `from` (this node knows it from the leader's report when it
        // holds no replica), or `from` itself if that move failed (a leader may take itself
        // out of the voters: it steps down once the new voters commit).
        let moved_off = || {
            self.broker
                .partition_leader(topic, partition)
                .is_some_and(|l| l != from)
        };
        if self.wait_for(LEADER_SETTLE_MS, moved_off).await.is_err() {
            let known = || self.broker.partition_leader(topic, partition).is_some();
            self.wait_for(ADMIN_WAIT_MS, known).await?;
        }
        let leader = self
            .broker
            .partition_leader(topic, partition)
            .ok_or_else(|| BrokerError::NotLeader {
                what: format!("partition {partition} of topic '{topic}'"),
                leader: None,
            })?;
        let group = GroupId::Partition {
            topic: topic.to_owned(),
            partition,
        };
        let step = |step: MembershipStep| {
            let group = group.clone();
            async move {
                change_members(
                    self.node_id(),
                    &self.replication.groups,
                    self.replication.transport.as_ref(),
                    leader,
                    &group,
                    &step,
                )
                .await
            }
        };
        step(MembershipStep::AddLearner { node: target, info }).await?;
        // The new placement makes the target start its replica (a learner: it joins, never
        // forms), and the nodes outside the group forward to the new set.
        self.propose(command).await?;
        step(MembershipStep::CatchUp { node: target }).await?;
        let voters = replicas.iter().copied().collect();
        step(MembershipStep::SetVoters { voters }).await?;
        tracing::info!(%group, from, to = target, "moved a replica");
        Ok(())
    }

    /// Each partition's leader as this node knows it, kept when `keep(leader)`.
    fn current_leaders(
        &self,
        state: &ClusterState,
        keep: impl Fn(u64) -> bool,
    ) -> BTreeMap<(String, u32), u64> {
        let mut leaders = BTreeMap::new();
        for (name, record) in state.topics() {
            for partition in 0..record.placement.len() as u32 {
                if let Some(leader) = self.broker.partition_leader(name, partition)
                    && keep(leader)
                {
                    leaders.insert((name.clone(), partition), leader);
                }
            }
        }
        leaders
    }

    async fn run_moves(&self, state: &ClusterState, plan: Vec<LeaderMove>) -> RebalanceReport {
        let mut report = RebalanceReport::default();
        for planned in plan {
            let replicas = state
                .topic(&planned.topic)
                .and_then(|t| t.placement.get(planned.partition as usize))
                .map(|p| p.replicas.clone())
                .unwrap_or_default();
            match self
                .transfer(&planned.topic, planned.partition, &replicas, planned.to)
                .await
            {
                Ok(moved) => report.moved.push(moved),
                Err(error) => report.failed.push(FailedMove {
                    topic: planned.topic,
                    partition: planned.partition,
                    to: planned.to,
                    reason: error.to_string(),
                }),
            }
        }
        report
    }

    /// Hands the partition's leadership to `target`, one of `replicas`.
    pub(super) async fn transfer(
        &self,
        topic: &str,
        partition: u32,
        replicas: &[u64],
        target: u64,
    ) -> Result<LeaderMoved> {
        let status = self.broker.partition_status(topic, partition);
        let from = match &status {
            Some(status) => status.leader,
            // Held elsewhere: the leader the metadata records.
            None => self.broker.partition_leader(topic, partition),
        };
        let moved = |leader, term, took: Duration| LeaderMoved {
            topic: topic.to_owned(),
            partition,
            from,
            leader,
            term,
            took_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        };
        if let Some(status) = &status
            && status.leader == Some(target)
        {
            return Ok(moved(target, status.term, Duration::ZERO));
        }
        let voters = status.map_or_else(|| replicas.to_vec(), |s| s.voters);
        let group = GroupId::Partition {
            topic: topic.to_owned(),
            partition,
        };
        let coordinator = TransferCoordinator {
            me: self.node_id(),
            local: self.replication.groups.as_ref(),
            transport: self.replication.transport.as_ref(),
        };
        let started = Instant::now();
        match coordinator.move_leader(&group, &voters, target).await {
            Ok(leadership) => {
                tracing::info!(%group, from, to = target, ms = started.elapsed().as_millis(),
                    "moved a partition's leadership");
                Ok(moved(leadership.leader, leadership.term, started.elapsed()))
            }
            Err(error) => Err(BrokerError::LeaderNotMoved {
                what: group.to_string(),
                target,
                reason: error.to_string(),
            }),
        }
    }
}

impl ClusterNode {
    /// Moves the controller's leadership from this node to another voter (the first that
    /// takes it); the error to answer: [`BrokerError::NotLeader`] naming the new leader, or
    /// [`BrokerError::LeaderNotMoved`].
    async fn hand_over_controller(&self) -> BrokerError {
        let me = self.node_id();
        let voters: Vec<u64> = self.controller.voters().into_iter().collect();
        let coordinator = TransferCoordinator {
            me,
            local: self.replication.groups.as_ref(),
            transport: self.replication.transport.as_ref(),
        };
        let mut reason = String::from("no other voter");
        for target in voters.iter().copied().filter(|v| *v != me) {
            match coordinator
                .move_leader(&GroupId::Controller, &voters, target)
                .await
            {
                Ok(leadership) => {
                    tracing::info!(
                        from = me,
                        to = leadership.leader,
                        "handed the cluster metadata's leadership over, to be removed"
                    );
                    return BrokerError::NotLeader {
                        what: "cluster metadata".into(),
                        leader: Some(leadership.leader),
                    };
                }
                Err(error) => reason = error.to_string(),
            }
        }
        BrokerError::LeaderNotMoved {
            what: GroupId::Controller.to_string(),
            target: me,
            reason,
        }
    }
}

/// [`ClusterError::UnknownNode`] unless the metadata knows node `id`.
fn known_node(state: &ClusterState, id: u64) -> Result<()> {
    match state.node(id) {
        Some(_) => Ok(()),
        None => Err(ClusterError::UnknownNode { node: id }.into()),
    }
}
