//! openraft's network for one group: each RPC encoded (see `codec`), sent with the node's
//! [`Transport`] within openraft's deadline for it, and its answer decoded.

use std::sync::Arc;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};

use super::codec::{AppendAnswer, decode_json, encode_append, encode_json};
use super::transport::{GroupId, Rpc, RpcCall, RpcError, Transport, TransportError};
use super::types::{NodeInfo, TypeConfig};

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
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        let answer = self.call(Rpc::Append, encode_append(&rpc), &option).await?;
        let answer: AppendAnswer = decode_json(&answer).map_err(|e| undecodable(&e))?;
        answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
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
