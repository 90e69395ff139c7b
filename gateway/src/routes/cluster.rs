//! `GET /v1/cluster`: the cluster as the answering node sees it.

use axum::Json;
use axum::extract::State;
use broker_core::cluster::ClusterState;
use broker_core::raft::GroupStatus;

use crate::api::cluster::{ClusterView, GroupView, NodeView, PartitionView, ReplicaView};
use crate::app::AppState;
use crate::cluster::LIVE_WITHIN;
use crate::http::problem::Problem;

/// The cluster.
///
/// Nodes (zone, addresses, liveness as the answering node hears them), the controller leader,
/// and for every partition its leader, term, replicas and their lag (the lag is known on the
/// partition's leader: ask it). On a node run without cluster settings, `mode` is `single`.
#[utoipa::path(get, path = "/v1/cluster", tag = "cluster",
    responses(
        (status = 200, description = "The cluster as this node sees it", body = ClusterView),
        (status = 401, description = "No valid token (`unauthorized`)", body = Problem,
            content_type = "application/problem+json"),
    ))]
pub(crate) async fn cluster(State(state): State<AppState>) -> Json<ClusterView> {
    let Some(node) = &state.cluster else {
        return Json(ClusterView {
            mode: "single",
            node_id: None,
            controller: None,
            nodes: Vec::new(),
            partitions: Vec::new(),
        });
    };
    let metadata = node.state();
    let me = node.node_id();
    let controller = node.controller_status();
    Json(ClusterView {
        mode: "cluster",
        node_id: Some(me),
        controller: Some(GroupView {
            leader: controller.leader,
            term: controller.term,
        }),
        nodes: nodes(&state, &metadata, me),
        partitions: partitions(&state, &metadata),
    })
}

fn nodes(state: &AppState, metadata: &ClusterState, me: u64) -> Vec<NodeView> {
    metadata
        .nodes()
        .values()
        .map(|n| {
            let since = state.liveness.as_ref().and_then(|l| l.since(n.id));
            NodeView {
                id: n.id,
                zone: n.zone.clone(),
                public_addr: n.public_addr.clone(),
                cluster_addr: n.cluster_addr.clone(),
                state: if n.is_active() { "active" } else { "draining" }.to_owned(),
                live: n.id == me || since.is_some_and(|s| s <= LIVE_WITHIN),
                last_seen_ms: since.map(|s| u64::try_from(s.as_millis()).unwrap_or(u64::MAX)),
            }
        })
        .collect()
}

fn partitions(state: &AppState, metadata: &ClusterState) -> Vec<PartitionView> {
    let mut out = Vec::new();
    for (name, record) in metadata.topics() {
        for (partition, placement) in (0u32..).zip(&record.placement) {
            let status: Option<GroupStatus> = state.broker.partition_status(name, partition);
            let replicas = placement
                .replicas
                .iter()
                .map(|node| ReplicaView {
                    node: *node,
                    lag: status.as_ref().and_then(|s| s.lag(*node)),
                })
                .collect();
            out.push(PartitionView {
                topic: name.clone(),
                partition,
                // A partition held elsewhere: the leader the metadata records.
                leader: match &status {
                    Some(status) => status.leader,
                    None => state.broker.partition_leader(name, partition),
                },
                term: status.as_ref().map(|s| s.term),
                replicas,
            });
        }
    }
    out
}
