//! Writing already-built records into a partition led by another node: the body of an
//! [`Rpc::Write`] is a message batch ([`EntryBody`] in its wire form) that the partition's
//! leader proposes to its group as it is, ids and marks unchanged. A redrive uses it: its
//! records keep their original ids and are no client's produce (no dedup claim), so they
//! cannot go through the public produce route.

use std::time::Duration;

use bytes::Bytes;
use openraft::Raft;
use openraft::error::{ClientWriteError, RaftError};

use super::coalesce::PROPOSE_TIMEOUT_MS;
use super::groups::{ProposeAnswer, ProposeRefusal};
use super::transport::{GroupId, Rpc, RpcCall, RpcError, Transport, TransportError};
use super::types::TypeConfig;
use crate::error::{BrokerError, Result};
use crate::message::Record;
use crate::storage::{BatchKind, EntryBody};

/// Longest a write call may take: the leader's own bound on committing it, plus a margin
/// for the call itself.
pub const WRITE_CALL_TIMEOUT_MS: u64 = PROPOSE_TIMEOUT_MS + 2_000;

/// Proposes the message batch `body` (an [`Rpc::Write`]'s request) to `raft`, this node's
/// replica of the group, which must lead it; anything but a message batch is refused.
pub async fn answer_write(
    raft: &Raft<TypeConfig>,
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
    let timeout = Duration::from_millis(PROPOSE_TIMEOUT_MS);
    Ok(
        match tokio::time::timeout(timeout, raft.client_write(entry)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward)))) => {
                Err(ProposeRefusal::NotLeader(forward.leader_id))
            }
            Ok(Err(e)) => Err(ProposeRefusal::Failed(e.to_string())),
            Err(_) => Err(ProposeRefusal::Timeout),
        },
    )
}

/// Asks node `leader` to append `records` (already built: ids, timestamps and marks as they
/// are) to `group`, a partition it leads, and waits until they are committed. A refusal or a
/// lost call is [`BrokerError::NotLeader`] (nothing was written, or the caller cannot know:
/// the outcome of a call that got no answer is [`BrokerError::ReplicationTimeout`]).
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
    let answer = match transport.call(leader, call).await {
        Ok(answer) => answer,
        Err(TransportError::Timeout { ms, .. }) => {
            return Err(BrokerError::ReplicationTimeout { what, ms });
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
            ms: PROPOSE_TIMEOUT_MS,
        },
        ProposeRefusal::Failed(reason) => BrokerError::NotLeader {
            what: format!("{what} (node {leader}: {reason})"),
            leader: None,
        },
    })
}
