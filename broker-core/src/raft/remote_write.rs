//! Writing already-built records into a partition led by another node: the body of an
//! [`Rpc::Write`] is a message batch ([`EntryBody`] in its wire form) that the partition's
//! leader proposes to its group as it is, ids and marks unchanged. A redrive uses it: its
//! records keep their original ids and are no client's produce (no dedup claim), so they
//! cannot go through the public produce route.

use std::time::Duration;

use bytes::Bytes;

use super::coalesce::PROPOSE_TIMEOUT_MS;
use super::groups::{ProposeAnswer, ProposeRefusal};
use super::partition_group::PartitionGroup;
use super::transport::{GroupId, Rpc, RpcCall, RpcError, Transport, TransportError};
use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::storage::{BatchKind, EntryBody, Proposer};

/// How long the leader's proposer waits for a write at most: its entry's commit bound, and
/// as long again behind the entries queued ahead of it ([`super::RaftProposer`]).
const LEADER_WRITE_WAIT_MS: u64 = 2 * PROPOSE_TIMEOUT_MS;
/// Longest a write call may take: the leader's own bound on committing it, plus a margin
/// for the call itself.
pub const WRITE_CALL_TIMEOUT_MS: u64 = LEADER_WRITE_WAIT_MS + 2_000;

/// Proposes the message batch `body` (an [`Rpc::Write`]'s request) through `seat`, this
/// node's seat in the partition's group, as a produce here is: refused unless this node leads
/// the partition and its leadership is not moving away (naming the leader to ask), or when
/// the partition has too many proposals in flight; joined with the writes that wait. The
/// records go as they are (ids kept, no dedup claim). Anything but a message batch, or a
/// group with no seat (the controller's), is refused.
pub async fn answer_write(
    seat: Option<&PartitionGroup>,
    mut body: Bytes,
) -> std::result::Result<ProposeAnswer, RpcError> {
    let malformed = |reason: String| RpcError::Malformed {
        rpc: Rpc::Write.as_str(),
        reason,
    };
    let entry = EntryBody::take_wire(&mut body).map_err(|e| malformed(e.to_string()))?;
    if entry.kind() != BatchKind::Messages || !body.is_empty() {
        return Err(malformed("not one message batch".into()));
    }
    let Some(seat) = seat else {
        return Err(malformed("not a partition's group".into()));
    };
    let slot = match seat.reserve() {
        Ok(slot) => slot,
        Err(refusal) => return Ok(Err(refusal_of(refusal))),
    };
    // The proposer bounds the wait (its own timeout covers the writes queued ahead).
    Ok(seat
        .propose(slot, entry)
        .await
        .map(|_| ())
        .map_err(refusal_of))
}

/// What a refused or failed proposal answers the writing node. `Failed` tells it that
/// nothing was stored (it answers `not_leader`), so a write whose outcome is unknown (its
/// commit timed out, or the Raft core panicked after the entry may have gone out) is
/// `Timeout`.
fn refusal_of(error: BrokerError) -> ProposeRefusal {
    match error {
        BrokerError::NotLeader { leader, .. } => ProposeRefusal::NotLeader(leader),
        BrokerError::ReplicationTimeout { .. } | BrokerError::Panicked { .. } => {
            ProposeRefusal::Timeout
        }
        other => ProposeRefusal::Failed(other.to_string()),
    }
}

/// Asks node `leader` to append `records` (already built: ids, timestamps and marks as they
/// are) to `group`, a partition it leads, and waits until they are committed. A refusal or a
/// call that never reached the leader is [`BrokerError::NotLeader`] (nothing was written);
/// one that got no answer, or lost its connection after it went out, is
/// [`BrokerError::ReplicationTimeout`] (the outcome is unknown).
pub async fn write_at_leader(
    transport: &dyn Transport,
    leader: u64,
    group: GroupId,
    records: &[Record],
) -> Result<()> {
    let what = group.to_string();
    let mut body = Vec::new();
    EntryBody::messages(records)?.put_wire(&mut body);
    let call = RpcCall {
        group,
        rpc: Rpc::Write,
        body: Bytes::from(body),
        timeout: Duration::from_millis(WRITE_CALL_TIMEOUT_MS),
    };
    let started = std::time::Instant::now();
    let answer = match transport.call(leader, call).await {
        Ok(answer) => answer,
        Err(TransportError::Timeout { ms, .. }) => {
            return Err(BrokerError::ReplicationTimeout { what, ms });
        }
        // The leader may have taken the write: its outcome is unknown, not refused.
        Err(error @ TransportError::Lost { .. }) => {
            return Err(BrokerError::ReplicationTimeout {
                what: format!("{what} ({error})"),
                ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
        Err(error) => {
            return Err(BrokerError::NotLeader {
                what: format!("{what} (node {leader}: {error})"),
                leader: None,
            });
        }
    };
    let answer: ProposeAnswer =
        serde_json::from_slice(&answer).map_err(|e| BrokerError::NotLeader {
            what: format!("{what} (node {leader} answered {e})"),
            leader: None,
        })?;
    answer.map_err(|refusal| match refusal {
        ProposeRefusal::NotLeader(leader) => BrokerError::NotLeader { what, leader },
        ProposeRefusal::LeaderAt { leader, .. } => BrokerError::NotLeader {
            what,
            leader: Some(leader),
        },
        ProposeRefusal::Timeout => BrokerError::ReplicationTimeout {
            what,
            ms: LEADER_WRITE_WAIT_MS,
        },
        ProposeRefusal::Failed(reason) => BrokerError::NotLeader {
            what: format!("{what} (node {leader}: {reason})"),
            leader: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::transport::TransportFuture;

    /// A transport whose every call fails with one error.
    struct Failing(TransportError);

    impl Transport for Failing {
        fn call(&self, _target: u64, _call: RpcCall) -> TransportFuture {
            let error = self.0.clone();
            Box::pin(async move { Err(error) })
        }
    }

    fn one_record() -> Vec<Record> {
        vec![Record {
            id: "m-1".to_owned(),
            timestamp_ms: 1,
            key: None,
            value: Bytes::from_static(b"a"),
            binary: false,
            scheduled: false,
            client_id: false,
            headers: Vec::new(),
            tags: Vec::new(),
            trace: None,
            origin: None,
        }]
    }

    fn group() -> GroupId {
        GroupId::Partition {
            topic: "orders".to_owned(),
            partition: 0,
        }
    }

    #[tokio::test]
    async fn a_write_whose_call_was_lost_after_it_went_out_has_an_unknown_outcome() {
        let cases = [
            (
                TransportError::Lost {
                    node: 2,
                    reason: "connection closed before message completed".to_owned(),
                },
                true,
            ),
            // A call that never reached the leader wrote nothing: a refusal.
            (
                TransportError::Unreachable {
                    node: 2,
                    reason: "connection refused".to_owned(),
                },
                false,
            ),
        ];
        for (error, unknown) in cases {
            let answer = write_at_leader(&Failing(error), 2, group(), &one_record()).await;
            match unknown {
                true => assert!(
                    matches!(answer, Err(BrokerError::ReplicationTimeout { .. })),
                    "{answer:?}"
                ),
                false => assert!(
                    matches!(answer, Err(BrokerError::NotLeader { .. })),
                    "{answer:?}"
                ),
            }
        }
    }

    #[test]
    fn a_leader_whose_raft_panicked_answers_an_unknown_outcome_not_a_refusal() {
        let panicked = BrokerError::Panicked {
            task: "the Raft of topic 'orders' partition 0".to_owned(),
        };
        assert_eq!(refusal_of(panicked), ProposeRefusal::Timeout);
        assert_eq!(
            refusal_of(BrokerError::ShuttingDown),
            ProposeRefusal::Failed(BrokerError::ShuttingDown.to_string())
        );
    }
}
