//! This node's place in the cluster: registering it until the metadata holds its record, and,
//! on the controller leader, growing the controller group's voters as nodes join.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::{ClusterNode, MAX_CONTROLLER_VOTERS};
use crate::cluster::{Command, NodeRecord};
use crate::raft::NodeInfo;

/// Pause between attempts to register this node while the controller has no leader.
const REGISTER_RETRY_MS: u64 = 250;
/// How often the controller's membership is checked when no command is applied: a leader
/// elected after a node registered adds it within this.
const MEMBERSHIP_CHECK_MS: u64 = 1_000;

impl ClusterNode {
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
}

/// Registers the node until the metadata holds its record as it is now.
pub(super) async fn register(node: Weak<ClusterNode>) {
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
pub(super) async fn membership_loop(node: Weak<ClusterNode>) {
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
