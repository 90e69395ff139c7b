//! Coalescing a partition's proposals: the writes that queue while earlier ones commit go
//! to Raft as one entry.
//!
//! Every Raft entry costs the same fixed work on each replica (an append RPC share, a frame,
//! an fsync, an apply, a commit notice), whatever it holds. Single-message produces and the
//! control records of receives and acks would each pay it; a partition's writer task instead
//! keeps at most [`MAX_WRITES_IN_FLIGHT`] entries of each lane (messages; control records) in
//! Raft and joins whatever waits meanwhile into the lane's next one (group commit, as the
//! single node's writer queue does). A lone write goes at once; under load the entries grow,
//! their number does not.
//!
//! A joined entry holds its parts in the order they were proposed, so the log reads exactly
//! as if each had been an entry of its own; each proposer hears where its own messages
//! landed.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use openraft::Raft;
use openraft::error::{ClientWriteError, Fatal, RaftError};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use super::leader_proof::LeaderProof;
use super::transfer::WriteHold;
use super::types::{Applied, NodeInfo, TypeConfig};
use crate::error::{BrokerError, Result};
use crate::storage::{AppendResult, BatchKind, EntryBody, ProposalSlot};
use crate::telemetry::{self, WriteStage};

/// Entries each lane of one partition's writes (messages; control records) keeps in Raft at
/// once. Two: a write that arrives while one entry commits goes at once in the second place
/// (no wait at a light load), and under load each entry gathers what came during the other's
/// commit.
pub const MAX_WRITES_IN_FLIGHT: usize = 2;
/// Bytes joined into one entry at most: about the size the replication sends in one append
/// RPC, far below the frame limit, so one large entry does not hold up the small ones
/// behind it for long.
pub const MAX_JOINED_BYTES: usize = 1024 * 1024;
/// How long an entry may take to commit before its proposers hear that its outcome is
/// unknown: several election timeouts, so a failover in progress usually finishes first.
pub const PROPOSE_TIMEOUT_MS: u64 = 5_000;

/// One proposal waiting for its entry.
pub(super) struct Proposal {
    /// What to write.
    pub(super) body: EntryBody,
    /// Where the outcome goes.
    pub(super) reply: oneshot::Sender<Result<AppendResult>>,
    /// The proposal's place, given back once it is answered.
    pub(super) slot: ProposalSlot,
    /// Set by a proposer that stopped waiting for its turn: if it is not yet being written,
    /// it is answered [`abandoned`] and never written, so the proposer learns for sure.
    pub(super) abandoned: Arc<AtomicBool>,
    /// When it was handed to the partition's writer.
    pub(super) queued: Instant,
}

/// The answer to a proposal dropped unwritten because its proposer gave up waiting for its
/// turn ([`Proposal::abandoned`]): nothing was written, so the caller may write it again.
pub(super) fn abandoned(what: &str) -> BrokerError {
    tracing::debug!(%what, "a proposal that waited too long for its turn was dropped unwritten");
    BrokerError::Overloaded {
        resource: "the partition's writes ahead (not written: waited too long)",
        retry_after_ms: 1_000,
    }
}

/// Takes from the front of `queue` the proposals that go into the next entry: the first
/// one, and those after it of the same kind (messages, or control) while the entry stays
/// within [`MAX_JOINED_BYTES`].
pub(super) fn take_run(queue: &mut VecDeque<Proposal>) -> Vec<Proposal> {
    let Some(first) = queue.pop_front() else {
        return Vec::new();
    };
    let kind = first.body.kind();
    let mut bytes = first.body.len();
    let mut run = vec![first];
    if kind == BatchKind::Meta {
        return run;
    }
    while let Some(next) = queue.front() {
        if next.body.kind() != kind || bytes + next.body.len() > MAX_JOINED_BYTES {
            break;
        }
        bytes += next.body.len();
        run.extend(queue.pop_front());
    }
    run
}

/// Where each part of an entry that `applied` answers landed: its messages follow the
/// earlier parts' in order.
pub(super) fn split_applied(applied: Applied, counts: &[u32]) -> Vec<AppendResult> {
    let mut base = applied.base_offset;
    counts
        .iter()
        .map(|&count| {
            let result = AppendResult {
                base_offset: base,
                count,
                fsynced: true,
                replicated: true,
            };
            base += u64::from(count);
            result
        })
        .collect()
}

/// The writer task of one partition: joins and writes what `proposals` brings until every
/// sender is gone and every write has ended.
pub(super) async fn write_proposals(
    raft: Raft<TypeConfig>,
    what: String,
    hold: Option<WriteHold>,
    proof: Arc<LeaderProof>,
    mut proposals: mpsc::Receiver<Proposal>,
) {
    let mut lanes = Lanes::default();
    let mut lane_of = HashMap::new();
    let mut writes = JoinSet::new();
    let mut open = true;
    loop {
        tokio::select! {
            received = proposals.recv(), if open => match received {
                Some(proposal) => lanes.push(proposal),
                None => open = false,
            },
            Some(done) = writes.join_next_with_id(), if !writes.is_empty() => {
                let id = match done {
                    Ok((id, ())) => id,
                    Err(error) => error.id(),
                };
                if let Some(lane) = lane_of.remove(&id) {
                    lanes.written(lane);
                }
            }
        }
        while let Ok(proposal) = proposals.try_recv() {
            lanes.push(proposal);
        }
        while let Some((lane, run)) = lanes.next_run() {
            let write = write_entry(
                raft.clone(),
                what.clone(),
                hold.clone(),
                Arc::clone(&proof),
                run,
            );
            lane_of.insert(writes.spawn(write).id(), lane);
        }
        if !open && lanes.is_empty() && writes.is_empty() {
            return;
        }
    }
}

/// A partition's proposals waiting for their entry, in two lanes: messages, and the rest
/// (control records of receives and acks, Raft's own entries). Each lane keeps at most
/// [`MAX_WRITES_IN_FLIGHT`] entries in Raft and joins what waits meanwhile, so a lease or
/// an ack never waits behind produce entries committing, nor a produce behind them: with
/// one lane of two, at 1,000 produces a second and two consumers, a produce waited 1.9 ms
/// (p50) for its turn and the publish-to-receive latency was 10.9-11.5 ms (p50); with two
/// lanes 8.4 ms, and produce-1 throughput stayed the same (four entries in one lane lost a
/// fifth of it to smaller entries).
#[derive(Default)]
struct Lanes {
    queues: [VecDeque<Proposal>; 2],
    in_flight: [usize; 2],
}

impl Lanes {
    /// The lane of `body`.
    fn of(body: &EntryBody) -> usize {
        usize::from(body.kind() != BatchKind::Messages)
    }

    fn push(&mut self, proposal: Proposal) {
        self.queues[Self::of(&proposal.body)].push_back(proposal);
    }

    /// The next run to write, from a lane with room, and its lane; counted in flight.
    fn next_run(&mut self) -> Option<(usize, Vec<Proposal>)> {
        let lane = (0..self.queues.len())
            .find(|&l| self.in_flight[l] < MAX_WRITES_IN_FLIGHT && !self.queues[l].is_empty())?;
        self.in_flight[lane] += 1;
        Some((lane, take_run(&mut self.queues[lane])))
    }

    /// One entry of `lane` was written (or failed).
    fn written(&mut self, lane: usize) {
        self.in_flight[lane] = self.in_flight[lane].saturating_sub(1);
    }

    fn is_empty(&self) -> bool {
        self.queues.iter().all(VecDeque::is_empty)
    }
}

/// Writes `run` as one entry and answers each of its proposers; refused while `hold` says
/// the leadership is moving away. A commit renews `proof`.
async fn write_entry(
    raft: Raft<TypeConfig>,
    what: String,
    hold: Option<WriteHold>,
    proof: Arc<LeaderProof>,
    run: Vec<Proposal>,
) {
    let run = still_wanted(&raft, &what, run);
    if run.is_empty() {
        return;
    }
    for proposal in &run {
        telemetry::write_stage(WriteStage::Queue, proposal.queued.elapsed().as_secs_f64());
    }
    let counts: Vec<u32> = run.iter().map(|p| p.body.message_count()).collect();
    let (bodies, answers): (Vec<EntryBody>, Vec<_>) =
        run.into_iter().map(|p| (p.body, (p.reply, p.slot))).unzip();
    let body = if bodies.len() == 1 {
        bodies.into_iter().next()
    } else {
        match EntryBody::concat(&bodies) {
            Ok(body) => Some(body),
            Err(error) => {
                // take_run keeps runs of one kind within the byte bound, so this is a bug.
                tracing::error!(%error, %what, "proposals could not be joined");
                None
            }
        }
    };
    let writing = hold.as_ref().map(WriteHold::begin_write).transpose();
    let outcome = match (body, writing) {
        (_, Err(target)) => Err(BrokerError::NotLeader {
            what,
            leader: Some(target),
        }),
        (Some(body), Ok(_writing)) => write_one(&raft, &what, body, &proof).await,
        (None, Ok(_)) => Err(BrokerError::ShuttingDown),
    };
    match outcome {
        Ok(applied) => {
            for ((reply, _slot), result) in answers.into_iter().zip(split_applied(applied, &counts))
            {
                let _gone = reply.send(Ok(result));
            }
        }
        Err(error) => {
            for (reply, _slot) in answers {
                let _gone = reply.send(Err(same_error(&error)));
            }
        }
    }
}

/// The proposals of `run` still to be written. One whose proposer gave up waiting for its
/// turn is answered [`abandoned`] unwritten; one bound to a Raft term other than the current
/// one is refused with [`BrokerError::NotLeader`] ([`ProposalSlot::term`]).
fn still_wanted(raft: &Raft<TypeConfig>, what: &str, run: Vec<Proposal>) -> Vec<Proposal> {
    let term = raft.metrics().borrow().current_term;
    run.into_iter()
        .filter_map(|proposal| {
            let refusal = if proposal.abandoned.load(Ordering::Acquire) {
                abandoned(what)
            } else if proposal.slot.term.is_some_and(|bound| bound != term) {
                BrokerError::NotLeader {
                    what: what.to_owned(),
                    leader: None,
                }
            } else {
                return Some(proposal);
            };
            let _gone = proposal.reply.send(Err(refusal));
            None
        })
        .collect()
}

/// Proposes one entry and waits (bounded) for its commit, which proves in `proof` that this
/// node led when it proposed it: a quorum took the entry after that.
async fn write_one(
    raft: &Raft<TypeConfig>,
    what: &str,
    body: EntryBody,
    proof: &LeaderProof,
) -> Result<Applied> {
    let timeout = Duration::from_millis(PROPOSE_TIMEOUT_MS);
    let proposed = Instant::now();
    match tokio::time::timeout(timeout, raft.client_write(body)).await {
        Ok(Ok(response)) => {
            telemetry::raft_commit(proposed.elapsed().as_secs_f64());
            proof.record(response.log_id.leader_id.term, proposed);
            Ok(response.data)
        }
        Ok(Err(error)) => Err(refusal(what, error)),
        Err(_) => Err(BrokerError::ReplicationTimeout {
            what: what.to_owned(),
            ms: PROPOSE_TIMEOUT_MS,
        }),
    }
}

/// What a proposal openraft refused or lost tells its proposers. `ForwardToLeader` comes
/// before the entry reached the log, or once a new leader's log replaced it: nothing is
/// stored. Anything else (the Raft core stopped or panicked) may come after the entry was
/// appended and sent to followers, who may still commit it: the outcome is unknown, never
/// a refusal (`shutting_down` and `not_leader` promise that nothing was stored).
fn refusal(what: &str, error: RaftError<u64, ClientWriteError<u64, NodeInfo>>) -> BrokerError {
    match error {
        RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => BrokerError::NotLeader {
            what: what.to_owned(),
            leader: forward.leader_id,
        },
        RaftError::Fatal(Fatal::Panicked) => BrokerError::Panicked {
            task: format!("the Raft of {what}"),
        },
        error => {
            tracing::warn!(%error, %what, "a proposal failed with its outcome unknown");
            BrokerError::ReplicationTimeout {
                what: format!("{what} (its Raft stopped: {error})"),
                ms: PROPOSE_TIMEOUT_MS,
            }
        }
    }
}

/// The error of an entry, for each of its proposers (the kinds a write can end with).
fn same_error(error: &BrokerError) -> BrokerError {
    match error {
        BrokerError::NotLeader { what, leader } => BrokerError::NotLeader {
            what: what.clone(),
            leader: *leader,
        },
        BrokerError::ReplicationTimeout { what, ms } => BrokerError::ReplicationTimeout {
            what: what.clone(),
            ms: *ms,
        },
        BrokerError::Panicked { task } => BrokerError::Panicked { task: task.clone() },
        _ => BrokerError::ShuttingDown,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::message::Record;

    fn proposal(body: EntryBody) -> Proposal {
        let slot = Arc::new(Semaphore::new(1))
            .try_acquire_owned()
            .expect("a permit");
        Proposal {
            body,
            reply: oneshot::channel().0,
            slot: ProposalSlot {
                permit: slot,
                term: None,
            },
            abandoned: Arc::default(),
            queued: Instant::now(),
        }
    }

    fn messages(n: usize, value_len: usize) -> EntryBody {
        let records: Vec<Record> = (0..n)
            .map(|i| Record {
                id: format!("m{i}"),
                timestamp_ms: 1,
                key: None,
                value: Bytes::from(vec![7; value_len]),
                binary: false,
                scheduled: false,
                client_id: false,
                headers: Vec::new(),
                tags: Vec::new(),
                trace: None,
                origin: None,
            })
            .collect();
        EntryBody::messages(&records).expect("messages")
    }

    fn control() -> EntryBody {
        EntryBody::control(1, &[Bytes::from_static(b"ack")]).expect("control")
    }

    fn kinds_and_counts(run: &[Proposal]) -> Vec<(BatchKind, u32)> {
        run.iter()
            .map(|p| (p.body.kind(), p.body.message_count()))
            .collect()
    }

    #[test]
    fn a_run_takes_the_same_kind_in_order_and_stops_at_the_other() {
        let mut queue: VecDeque<Proposal> = [
            messages(1, 10),
            messages(3, 10),
            control(),
            control(),
            messages(2, 10),
        ]
        .into_iter()
        .map(proposal)
        .collect();
        let first = take_run(&mut queue);
        assert_eq!(
            kinds_and_counts(&first),
            vec![(BatchKind::Messages, 1), (BatchKind::Messages, 3)]
        );
        let second = take_run(&mut queue);
        assert_eq!(
            kinds_and_counts(&second),
            vec![(BatchKind::Control, 0), (BatchKind::Control, 0)]
        );
        assert_eq!(
            kinds_and_counts(&take_run(&mut queue)),
            vec![(BatchKind::Messages, 2)]
        );
        assert!(take_run(&mut queue).is_empty());
    }

    #[test]
    fn a_run_stays_within_the_byte_bound_but_always_takes_one() {
        let big = MAX_JOINED_BYTES / 3;
        let mut queue: VecDeque<Proposal> = (0..4)
            .map(|_| proposal(messages(1, big)))
            .chain([proposal(messages(1, MAX_JOINED_BYTES * 2))])
            .collect();
        let first = take_run(&mut queue);
        assert_eq!(first.len(), 2, "two thirds fit, a third would not");
        assert!(first.iter().map(|p| p.body.len()).sum::<usize>() <= MAX_JOINED_BYTES);
        assert_eq!(take_run(&mut queue).len(), 2);
        assert_eq!(
            take_run(&mut queue).len(),
            1,
            "an entry over the bound goes alone"
        );
    }

    #[test]
    fn each_part_hears_where_its_own_messages_landed() {
        let applied = Applied {
            base_offset: 40,
            count: 6,
        };
        let parts = split_applied(applied, &[2, 0, 3, 1]);
        let places: Vec<(u64, u32)> = parts.iter().map(|r| (r.base_offset, r.count)).collect();
        assert_eq!(places, vec![(40, 2), (42, 0), (42, 3), (45, 1)]);
        assert!(parts.iter().all(|r| r.fsynced && r.replicated));
    }

    #[test]
    fn a_control_write_goes_at_once_while_message_entries_fill_their_lane() {
        let mut lanes = Lanes::default();
        for _ in 0..MAX_WRITES_IN_FLIGHT {
            lanes.push(proposal(messages(1, 10)));
            assert!(lanes.next_run().is_some(), "a lone write goes at once");
        }
        assert_eq!(lanes.in_flight, [MAX_WRITES_IN_FLIGHT, 0]);
        lanes.push(proposal(messages(1, 10)));
        lanes.push(proposal(control()));
        let (lane, run) = lanes
            .next_run()
            .expect("the control record's lane has room");
        assert_eq!(
            (lane, kinds_and_counts(&run)),
            (1, vec![(BatchKind::Control, 0)])
        );
        assert!(
            lanes.next_run().is_none(),
            "the messages wait for their lane"
        );

        lanes.push(proposal(messages(2, 10)));
        lanes.written(0);
        let (lane, run) = lanes.next_run().expect("a message entry was written");
        assert_eq!(lane, 0);
        assert_eq!(
            kinds_and_counts(&run),
            vec![(BatchKind::Messages, 1), (BatchKind::Messages, 2)],
            "what waited is joined, in order"
        );
        assert!(lanes.is_empty());
    }

    #[test]
    fn a_proposal_lost_with_its_raft_has_an_unknown_outcome_never_a_refusal() {
        use openraft::error::ForwardToLeader;
        let what = "topic 'jobs' partition 0";
        let forwarded = RaftError::APIError(ClientWriteError::ForwardToLeader(ForwardToLeader {
            leader_id: Some(2),
            leader_node: None,
        }));
        assert!(matches!(
            refusal(what, forwarded),
            BrokerError::NotLeader {
                leader: Some(2),
                ..
            }
        ));
        // Once was `shutting_down` (503, "nothing stored"): a leader's core that panicked
        // after appending an entry its followers then committed (R9, one run in five).
        let panicked = refusal(what, RaftError::Fatal(Fatal::Panicked));
        assert!(
            matches!(panicked, BrokerError::Panicked { .. }),
            "{panicked:?}"
        );
        assert!(matches!(
            same_error(&panicked),
            BrokerError::Panicked { .. }
        ));
        let stopped = refusal(what, RaftError::Fatal(Fatal::Stopped));
        assert!(
            matches!(stopped, BrokerError::ReplicationTimeout { .. }),
            "{stopped:?}"
        );
    }
}
