//! Handing a group's leadership to a chosen voter.
//!
//! openraft 0.9 has no leader transfer, and a candidate triggered on its own
//! (`trigger().elect()`) loses: every voter refuses votes while its leader lease holds
//! (renewed by each heartbeat). So a move is three steps, each an [`Rpc::Transfer`] of a
//! [`TransferStep`]:
//!
//! 1. [`TransferStep::Hold`] to every voter but the target: it stops its own heartbeats and
//!    new writes (the leader: an entry renews the followers' leases as a heartbeat does, and
//!    one the target lacks makes it lose the vote), then waits until the writes under way
//!    have ended and the target holds them; and it stops its own elections (everyone). So
//!    the leases run out and only the target campaigns. A hold lifts itself after `ms` (a timer), so a lost release cannot leave a
//!    group without heartbeats or elections for longer.
//! 2. [`TransferStep::Elect`] to the target: it campaigns and answers once it leads (or
//!    when its wait ends). A refused first campaign is repeated by its own election timer.
//! 3. [`TransferStep::Release`] to every voter held, whatever step 2 came to.
//!
//! Nothing here bypasses Raft's vote: the target wins only with a log as complete as a
//! majority's, so no committed entry is lost by a move.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use openraft::Raft;
use serde::{Deserialize, Serialize};

use super::transport::{GroupId, Rpc, RpcCall, RpcHandler, Transport};
use super::types::TypeConfig;

/// How long a move waits for the target to lead. A refused first campaign is repeated after
/// the other voters' leases (the longest election timeout, 500 ms) and one election timeout
/// run out, so about 1 s; five allow a busy machine several more rounds.
pub const TRANSFER_WAIT_MS: u64 = 5_000;
/// How long a hold lasts unless released: the whole wait plus [`TRANSFER_RPC_TIMEOUT_MS`]
/// for the release to arrive, so a move never lifts its own hold early and a lost release
/// leaves the group without heartbeats for at most this long.
pub const TRANSFER_HOLD_MS: u64 = TRANSFER_WAIT_MS + TRANSFER_RPC_TIMEOUT_MS;
/// How long one hold or release call may take (one hop, no disk I/O on the far side).
pub const TRANSFER_RPC_TIMEOUT_MS: u64 = 2_000;
/// How long the leader waits, once its heartbeats stop, for the target to hold every entry
/// it has: a target that lacks one cannot win, and appends in flight land within a few
/// round trips. Past it the move goes on (the target may still catch up).
const CATCH_UP_WAIT_MS: u64 = 1_000;

/// One step of a leadership move, as the body of an [`Rpc::Transfer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferStep {
    /// Stop heartbeats and elections here for `ms` so that `target` alone campaigns; a
    /// leader first waits a little for `target` to hold its whole log.
    Hold {
        /// The voter that is to lead.
        target: u64,
        /// How long the hold lasts unless released.
        ms: u64,
    },
    /// Campaign, and answer once leading or after `wait_ms`.
    Elect {
        /// How long to wait to lead.
        wait_ms: u64,
    },
    /// Lift a hold.
    Release,
}

/// The group's leader and term after a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leadership {
    /// The leader.
    pub leader: u64,
    /// Its term.
    pub term: u64,
}

/// A node's answer to a [`TransferStep`]: for `Elect`, its leadership once it leads.
pub type TransferAnswer = Result<Option<Leadership>, TransferRefusal>;

/// Why a step did not do what it asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum TransferRefusal {
    /// The target did not come to lead within its wait: the leader it knows then, if any.
    #[error("node {node} did not win the election within {ms} ms (leader then: {leader:?})")]
    NotElected {
        /// The target.
        node: u64,
        /// The wait.
        ms: u64,
        /// The leader it knew at the end.
        leader: Option<u64>,
    },
    /// The group is stopping or failed.
    #[error("the group cannot campaign: {0}")]
    Failed(String),
}

/// Why a move failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransferError {
    /// A step's call failed or its answer did not decode.
    #[error("{step} at node {node}: {reason}")]
    Call {
        /// Which step.
        step: &'static str,
        /// The node called.
        node: u64,
        /// What failed.
        reason: String,
    },
    /// The target answered that it did not come to lead.
    #[error(transparent)]
    Refused(#[from] TransferRefusal),
}

/// The holds this node keeps, by group: a hold's number, so that the timer of an earlier
/// hold does not lift a later one.
#[derive(Default)]
pub(super) struct Holds {
    current: Mutex<BTreeMap<GroupId, u64>>,
    issued: std::sync::atomic::AtomicU64,
    /// Each group's writes, as its proposer and its holds see them.
    writes: Mutex<BTreeMap<GroupId, Arc<GroupWrites>>>,
}

/// No move under way (node ids never take this value).
const NOT_MOVING: u64 = u64::MAX;

/// One group's writes on this node: how many entries its proposer is writing now, and the
/// voter its leadership is moving to while a hold lasts. Atomics, so that the proposer's
/// check before each entry takes no lock.
#[derive(Debug)]
struct GroupWrites {
    writing: AtomicUsize,
    moving_to: AtomicU64,
}

impl Default for GroupWrites {
    fn default() -> Self {
        GroupWrites {
            writing: AtomicUsize::new(0),
            moving_to: AtomicU64::new(NOT_MOVING),
        }
    }
}

/// Whether a group's leadership is being moved away from this node, as its proposer asks
/// before each write: a leader held for a move takes no new writes. Its followers' leader
/// leases must run out for the target to win, and every entry the leader replicates renews
/// them as a heartbeat would; so under a steady produce the move could never finish.
#[derive(Clone)]
pub struct WriteHold {
    writes: Arc<GroupWrites>,
}

/// An entry being written, counted until it is dropped (see [`WriteHold::begin_write`]).
pub struct Writing(Arc<GroupWrites>);

impl Drop for Writing {
    fn drop(&mut self) {
        self.0.writing.fetch_sub(1, Ordering::SeqCst);
    }
}

impl WriteHold {
    /// The voter the group's leadership is moving to, while this node is held for the move.
    pub fn moving_to(&self) -> Option<u64> {
        Some(self.writes.moving_to.load(Ordering::SeqCst)).filter(|t| *t != NOT_MOVING)
    }

    /// Counts an entry about to be proposed until the returned guard drops, or the voter
    /// the leadership is moving to (then nothing may be proposed). Counted first, checked
    /// second: a hold that a write did not see waits for that write to end (see
    /// [`TransferStep::Hold`]), so no entry reaches the log after the move has checked the
    /// target holds it all.
    pub fn begin_write(&self) -> Result<Writing, u64> {
        self.writes.writing.fetch_add(1, Ordering::SeqCst);
        let writing = Writing(Arc::clone(&self.writes));
        match self.moving_to() {
            Some(target) => Err(target),
            None => Ok(writing),
        }
    }
}

impl Holds {
    fn writes_of(&self, group: &GroupId) -> Arc<GroupWrites> {
        Arc::clone(
            crate::sync::lock(&self.writes)
                .entry(group.clone())
                .or_default(),
        )
    }

    /// The [`WriteHold`] of `group` on this node.
    pub(super) fn write_hold(&self, group: GroupId) -> WriteHold {
        WriteHold {
            writes: self.writes_of(&group),
        }
    }

    /// Whether `group`'s proposer is writing no entry now.
    fn writes_idle(&self, group: &GroupId) -> bool {
        self.writes_of(group).writing.load(Ordering::SeqCst) == 0
    }

    /// Marks `group` moving to `target` (`None`: not moving); the caller holds `current`.
    fn set_moving(&self, group: &GroupId, target: Option<u64>) {
        self.writes_of(group)
            .moving_to
            .store(target.unwrap_or(NOT_MOVING), Ordering::SeqCst);
    }

    /// Holds `raft` (heartbeats and elections off, no new writes) for `ms` while its
    /// leadership moves to `target`, lifting itself then.
    pub(super) fn hold(
        self: &Arc<Self>,
        group: GroupId,
        raft: &Raft<TypeConfig>,
        target: u64,
        ms: u64,
    ) {
        let number = self
            .issued
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        {
            let mut current = crate::sync::lock(&self.current);
            current.insert(group.clone(), number);
            self.set_moving(&group, Some(target));
        }
        switches(raft, false);
        let (holds, raft) = (Arc::clone(self), raft.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let mut current = crate::sync::lock(&holds.current);
            if current.get(&group) == Some(&number) {
                current.remove(&group);
                holds.set_moving(&group, None);
                switches(&raft, true);
                tracing::warn!(%group, "a leadership hold ran out without a release");
            }
        });
    }

    /// Lifts the hold of `group`, if any.
    pub(super) fn release(&self, group: &GroupId, raft: &Raft<TypeConfig>) {
        {
            let mut current = crate::sync::lock(&self.current);
            current.remove(group);
            self.set_moving(group, None);
        }
        switches(raft, true);
    }
}

fn switches(raft: &Raft<TypeConfig>, on: bool) {
    raft.runtime_config().heartbeat(on);
    raft.runtime_config().elect(on);
}

/// Answers one [`TransferStep`] for `raft`, this node's replica of `group`.
pub(super) async fn answer_step(
    holds: &Arc<Holds>,
    group: GroupId,
    raft: Raft<TypeConfig>,
    step: TransferStep,
) -> TransferAnswer {
    let me = raft.metrics().borrow().id;
    match step {
        TransferStep::Hold { target, ms } => {
            holds.hold(group.clone(), &raft, target, ms);
            let idle = {
                let holds = Arc::clone(holds);
                move || holds.writes_idle(&group)
            };
            wait_for_catch_up(&raft, me, target, idle).await;
            Ok(None)
        }
        TransferStep::Release => {
            holds.release(&group, &raft);
            Ok(None)
        }
        TransferStep::Elect { wait_ms } => campaign(&raft, me, wait_ms).await.map(Some),
    }
}

/// On the leader: waits (bounded) until no entry is being written (`idle`) and `target`
/// holds every entry this node has.
async fn wait_for_catch_up(
    raft: &Raft<TypeConfig>,
    me: u64,
    target: u64,
    idle: impl Fn() -> bool + Send + Sync + 'static,
) {
    let caught_up = move |m: &openraft::RaftMetrics<u64, super::NodeInfo>| {
        if m.current_leader != Some(me) {
            return true;
        }
        if !idle() {
            return false;
        }
        let matched = m
            .replication
            .as_ref()
            .and_then(|r| r.get(&target).copied().flatten());
        matched.map(|l| l.index) >= m.last_log_index
    };
    let wait = raft.wait(Some(Duration::from_millis(CATCH_UP_WAIT_MS)));
    if let Err(error) = wait.metrics(caught_up, "target caught up").await {
        tracing::debug!(%error, target, "moving leadership to a target still catching up");
    }
}

/// Campaigns and waits up to `wait_ms` to lead.
async fn campaign(
    raft: &Raft<TypeConfig>,
    me: u64,
    wait_ms: u64,
) -> Result<Leadership, TransferRefusal> {
    let leads = move |m: &openraft::RaftMetrics<u64, super::NodeInfo>| {
        m.current_leader == Some(me) && m.state == openraft::ServerState::Leader
    };
    {
        // Leading already (the asking node had not heard yet): no election, no new term.
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        if leads(&metrics) {
            return Ok(Leadership {
                leader: me,
                term: metrics.current_term,
            });
        }
    }
    raft.trigger()
        .elect()
        .await
        .map_err(|e| TransferRefusal::Failed(e.to_string()))?;
    match raft
        .wait(Some(Duration::from_millis(wait_ms)))
        .metrics(leads, "leads")
        .await
    {
        Ok(metrics) => Ok(Leadership {
            leader: me,
            term: metrics.current_term,
        }),
        Err(_) => Err(TransferRefusal::NotElected {
            node: me,
            ms: wait_ms,
            leader: raft.metrics().borrow().current_leader,
        }),
    }
}

/// Where a move runs: this node's id, its groups (answering its own steps without a network
/// hop) and the transport to the others.
pub struct TransferCoordinator<'a> {
    /// This node.
    pub me: u64,
    /// This node's groups.
    pub local: &'a dyn RpcHandler,
    /// RPCs to the others.
    pub transport: &'a dyn Transport,
}

impl TransferCoordinator<'_> {
    /// Moves `group`'s leadership to `target`, one of `voters`: holds the others, has the
    /// target campaign, then releases the others whatever came of it.
    pub async fn move_leader(
        &self,
        group: &GroupId,
        voters: &[u64],
        target: u64,
    ) -> Result<Leadership, TransferError> {
        let others: Vec<u64> = voters.iter().copied().filter(|v| *v != target).collect();
        let hold = TransferStep::Hold {
            target,
            ms: TRANSFER_HOLD_MS,
        };
        let mut held = Vec::new();
        let mut outcome = Ok(None);
        for node in &others {
            match self
                .step(group, *node, &hold, TRANSFER_RPC_TIMEOUT_MS)
                .await
            {
                Ok(_) => held.push(*node),
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            }
        }
        if outcome.is_ok() {
            let elect = TransferStep::Elect {
                wait_ms: TRANSFER_WAIT_MS,
            };
            let timeout = TRANSFER_WAIT_MS + TRANSFER_RPC_TIMEOUT_MS;
            outcome = self.step(group, target, &elect, timeout).await;
        }
        for node in held {
            if let Err(error) = self
                .step(group, node, &TransferStep::Release, TRANSFER_RPC_TIMEOUT_MS)
                .await
            {
                tracing::warn!(%error, %group, node, "a hold was not released; it runs out");
            }
        }
        match outcome? {
            Some(leadership) => Ok(leadership),
            None => Err(TransferError::Call {
                step: "elect",
                node: target,
                reason: "answered without a leadership".into(),
            }),
        }
    }

    /// Sends one step to `node` (this node's own groups directly) and decodes its answer.
    async fn step(
        &self,
        group: &GroupId,
        node: u64,
        step: &TransferStep,
        timeout_ms: u64,
    ) -> Result<Option<Leadership>, TransferError> {
        let name = match step {
            TransferStep::Hold { .. } => "hold",
            TransferStep::Elect { .. } => "elect",
            TransferStep::Release => "release",
        };
        let failed = |reason: String| TransferError::Call {
            step: name,
            node,
            reason,
        };
        let body = serde_json::to_vec(step)
            .map(Bytes::from)
            .map_err(|e| failed(e.to_string()))?;
        let timeout = Duration::from_millis(timeout_ms);
        let answer = if node == self.me {
            let local = self.local.handle(group.clone(), Rpc::Transfer, body);
            match tokio::time::timeout(timeout, local).await {
                Ok(answer) => answer.map_err(|e| failed(e.to_string()))?,
                Err(_) => return Err(failed(format!("no answer within {timeout_ms} ms"))),
            }
        } else {
            let call = RpcCall {
                group: group.clone(),
                rpc: Rpc::Transfer,
                body,
                timeout,
            };
            self.transport
                .call(node, call)
                .await
                .map_err(|e| failed(e.to_string()))?
        };
        let answer: TransferAnswer =
            serde_json::from_slice(&answer).map_err(|e| failed(e.to_string()))?;
        Ok(answer?)
    }
}
