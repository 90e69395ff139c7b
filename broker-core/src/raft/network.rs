//! openraft's network for one group: each RPC encoded (see `codec`), sent with the node's
//! [`Transport`] within openraft's deadline for it, and its answer decoded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{Backoff, RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{Entry, EntryPayload, LogId};

use super::codec::{AppendAnswer, decode_json, encode_append, encode_json};
use super::transport::{GroupId, Rpc, RpcCall, RpcError, Transport, TransportError};
use super::types::{NodeInfo, TypeConfig};
use crate::telemetry::{self, WriteStage};

/// Builds a [`PeerLink`] to each member of one group.
#[derive(Clone)]
pub struct GroupNetwork {
    transport: Arc<dyn Transport>,
    group: GroupId,
}

impl GroupNetwork {
    /// The network of `group`, over `transport`.
    pub fn new(transport: Arc<dyn Transport>, group: GroupId) -> GroupNetwork {
        GroupNetwork { transport, group }
    }
}

impl RaftNetworkFactory<TypeConfig> for GroupNetwork {
    type Network = PeerLink;

    async fn new_client(&mut self, target: u64, _node: &NodeInfo) -> PeerLink {
        PeerLink {
            transport: Arc::clone(&self.transport),
            group: self.group.clone(),
            target,
        }
    }
}

/// One group's link to one other member.
pub struct PeerLink {
    transport: Arc<dyn Transport>,
    group: GroupId,
    target: u64,
}

/// Most entry bytes one append carries (at least one entry, whatever its size): a follower
/// catching up is sent its entries in pieces of this size. openraft gives an append the
/// heartbeat interval ([`super::groups::HEARTBEAT_MS`], 50 ms) and, when it does not finish,
/// sends the same entries again at once; unbounded, an append held up to
/// [`super::groups::MAX_PAYLOAD_ENTRIES`] entries of up to [`super::coalesce::MAX_JOINED_BYTES`]
/// each (300 of them with openraft's default: beyond [`super::transport::MAX_RPC_BYTES`] too),
/// which a follower behind could never take in time. 4 MiB is copied over the network and
/// fsynced by a follower well within the deadline.
pub const MAX_APPEND_BYTES: usize = 4 * 1024 * 1024;

/// Cuts `entries` after the longest prefix (at least one entry) within `budget` bytes of
/// entry bodies; returns the last entry kept when it cut any.
fn keep_within(entries: &mut Vec<Entry<TypeConfig>>, budget: usize) -> Option<LogId<u64>> {
    let mut bytes = 0usize;
    let mut keep = 0usize;
    for entry in entries.iter() {
        let size = match &entry.payload {
            EntryPayload::Normal(body) => body.len(),
            EntryPayload::Blank | EntryPayload::Membership(_) => 0,
        };
        if keep > 0 && bytes + size > budget {
            break;
        }
        bytes += size;
        keep += 1;
    }
    if keep == entries.len() {
        return None;
    }
    entries.truncate(keep);
    entries.last().map(|e| e.log_id)
}

/// How long a leader waits before sending again to a member that refused or could not be
/// reached, doubling from the first to the last: a follower still taking in an earlier
/// append ([`super::transport::RpcError::Busy`]) is sent the entries again after the first
/// wait, and a member that is down is tried five times a second. openraft sends nothing to
/// the member meanwhile, heartbeats included (its default waits 500 ms), so the longest wait
/// stays below the shortest election timeout ([`super::groups::ELECTION_TIMEOUT_MS`]): a
/// follower that was only busy does not call an election for want of a heartbeat.
pub const BUSY_BACKOFF_MS: (u64, u64) = (super::groups::HEARTBEAT_MS, 200);
const _: () = assert!(BUSY_BACKOFF_MS.1 < super::groups::ELECTION_TIMEOUT_MS.0);

/// The waits of [`BUSY_BACKOFF_MS`]: the first, doubled up to the last, then the last.
fn backoff_waits() -> impl Iterator<Item = Duration> + Send + 'static {
    let (first, last) = BUSY_BACKOFF_MS;
    std::iter::successors(Some(first), move |ms| Some((ms * 2).min(last)))
        .map(Duration::from_millis)
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<u64, NodeInfo, RaftError<u64, E>>>;

impl PeerLink {
    async fn call<E: std::error::Error>(
        &self,
        rpc: Rpc,
        body: Result<bytes::Bytes, RpcError>,
        option: &RPCOption,
    ) -> Result<bytes::Bytes, RPCError<u64, NodeInfo, RaftError<u64, E>>> {
        let body = body.map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let call = RpcCall {
            group: self.group.clone(),
            rpc,
            body,
            timeout: option.hard_ttl(),
        };
        self.transport
            .call(self.target, call)
            .await
            .map_err(|e| match e {
                // A timeout may be a slow moment: retry at once; anything else means the peer
                // is down or refuses: back off.
                TransportError::Timeout { .. } => RPCError::Network(NetworkError::new(&e)),
                _ => RPCError::Unreachable(Unreachable::new(&e)),
            })
    }
}

fn undecodable<E: std::error::Error>(e: &RpcError) -> RPCError<u64, NodeInfo, RaftError<u64, E>> {
    RPCError::Network(NetworkError::new(e))
}

impl RaftNetwork<TypeConfig> for PeerLink {
    fn backoff(&self) -> Backoff {
        Backoff::new(backoff_waits())
    }

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        let mut rpc = rpc;
        let cut_after = keep_within(&mut rpc.entries, MAX_APPEND_BYTES);
        let partition = matches!(self.group, GroupId::Partition { .. });
        let sent = (partition && !rpc.entries.is_empty()).then(Instant::now);
        let answer = self.call(Rpc::Append, encode_append(&rpc), &option).await?;
        if let Some(sent) = sent {
            telemetry::write_stage(WriteStage::Replicate, sent.elapsed().as_secs_f64());
        }
        let answer: AppendAnswer = decode_json(&answer).map_err(|e| undecodable(&e))?;
        let answer = answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))?;
        // The follower has what was sent, not what was asked: openraft sends the rest next.
        Ok(match (answer, cut_after) {
            (AppendEntriesResponse::Success, Some(last)) => {
                AppendEntriesResponse::PartialSuccess(Some(last))
            }
            (answer, _) => answer,
        })
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<u64>, InstallSnapshotError> {
        let answer = self.call(Rpc::Snapshot, encode_json(&rpc), &option).await?;
        let answer: Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>> =
            decode_json(&answer).map_err(|e| undecodable(&e))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<u64>> {
        let answer = self.call(Rpc::Vote, encode_json(&rpc), &option).await?;
        let answer: Result<VoteResponse<u64>, RaftError<u64>> =
            decode_json(&answer).map_err(|e| undecodable(&e))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};

    use super::{backoff_waits, keep_within};
    use crate::raft::types::TypeConfig;
    use crate::storage::EntryBody;

    fn entry(index: u64, value_bytes: usize) -> Entry<TypeConfig> {
        let body = EntryBody::meta(1, &Bytes::from(vec![b'x'; value_bytes])).expect("body");
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(body),
        }
    }

    fn indexes(entries: &[Entry<TypeConfig>]) -> Vec<u64> {
        entries.iter().map(|e| e.log_id.index).collect()
    }

    #[test]
    fn an_append_keeps_the_entries_within_the_budget_and_names_the_last_one_sent() {
        let mut entries: Vec<_> = (1..=4).map(|i| entry(i, 1_000)).collect();
        let size = match &entries[0].payload {
            EntryPayload::Normal(body) => body.len(),
            _ => unreachable!("built above"),
        };
        let cut = keep_within(&mut entries, 2 * size + size / 2);
        assert_eq!(indexes(&entries), vec![1, 2]);
        assert_eq!(cut.map(|id| id.index), Some(2));
    }

    #[test]
    fn an_append_within_the_budget_is_sent_whole_and_an_oversized_entry_alone() {
        let mut entries: Vec<_> = (1..=3).map(|i| entry(i, 100)).collect();
        assert_eq!(keep_within(&mut entries, 1 << 20), None);
        assert_eq!(indexes(&entries), vec![1, 2, 3]);

        let mut entries: Vec<_> = (1..=3).map(|i| entry(i, 10_000)).collect();
        let cut = keep_within(&mut entries, 10);
        assert_eq!(indexes(&entries), vec![1]);
        assert_eq!(cut.map(|id| id.index), Some(1));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let waits: Vec<u64> = backoff_waits()
            .take(5)
            .map(|d| u64::try_from(d.as_millis()).expect("ms"))
            .collect();
        assert_eq!(waits, vec![50, 100, 200, 200, 200]);
    }
}
