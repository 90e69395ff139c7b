//! Starting this process as a cluster node: the cluster port, the peer client, the broker
//! replicating its partitions, and the [`ClusterNode`] steering it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use broker_core::Broker;
use broker_core::cluster::{NodeRecord, NodeState};
use broker_core::cluster_node::{ClusterNode, NodeStart};
use broker_core::raft::Replication;
use broker_core::raft::{NodeInfo, RaftGroups, raft_config};

use super::liveness::Liveness;
use super::peer_auth::PeerAuth;
use super::peer_client::PeerClient;
use crate::config::{ClusterSettings, Settings};
use crate::http::server::ServeError;

/// What the receipt key is derived for from the cluster secret.
const RECEIPT_KEY_PURPOSE: &str = "wharf receipt key v1";

/// What a started cluster node hands the server: the broker, and what the cluster port
/// serves.
pub struct StartedNode {
    /// The broker, replicating its partitions.
    pub broker: Arc<Broker>,
    /// The cluster port's listener and what answers there.
    pub port: ClusterPort,
}

/// The cluster port, serving, and the node it serves.
pub struct ClusterPort {
    /// The node.
    pub node: Arc<ClusterNode>,
    /// When each other node was last heard from.
    pub liveness: Liveness,
    /// Where the cluster port finds this node's alerts: set it once they are made.
    pub alerts: super::AlertsSlot,
    /// The cluster secret's proof, for the alert evaluator's calls to other nodes.
    pub auth: PeerAuth,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl ClusterPort {
    /// Stops the node's controller replica, then the cluster port (in-flight RPCs get
    /// [`super::CLUSTER_DRAIN_TIMEOUT`]).
    pub async fn shutdown(self) {
        self.node.shutdown().await;
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// Binds the cluster port, opens the broker in cluster mode and starts the node; `public`
/// is the bound public address (recorded in the cluster metadata for forwarding).
pub async fn start_node(
    settings: &Settings,
    cluster: &ClusterSettings,
    public: SocketAddr,
) -> Result<StartedNode, ServeError> {
    let fail = |e: &dyn std::fmt::Display| ServeError::Cluster(e.to_string());
    let listener = crate::http::accept::bind(cluster.listen)?;
    let auth = PeerAuth::new(cluster.secret.expose());
    let liveness = Liveness::default();
    let peers = PeerClient::new(
        cluster.node_id,
        auth.clone(),
        cluster.peers.clone(),
        liveness.clone(),
    )
    .map_err(|e| fail(&e))?;
    let groups = Arc::new(RaftGroups::default());
    // The port serves before any group starts, so peers' votes and appends reach this node
    // while it opens its partitions (a group not open yet answers 404 and is retried).
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let alerts = super::AlertsSlot::default();
    let task = tokio::spawn(super::serve_cluster_port(
        listener,
        auth.clone(),
        Arc::clone(&groups) as Arc<dyn broker_core::raft::RpcHandler>,
        liveness.clone(),
        Arc::clone(&alerts),
        async move {
            let _ = stopped.await;
        },
    ));
    let config = settings.broker_config();
    let replication = Replication {
        node_id: cluster.node_id,
        transport: Arc::new(peers),
        groups: Arc::clone(&groups),
        raft: raft_config().map_err(|e| fail(&e))?,
        receipt_key: auth.derive_key(RECEIPT_KEY_PURPOSE),
    };
    let log_config = config.log.clone();
    let broker = Broker::open_replicated(config, replication)
        .await
        .map_err(ServeError::OpenBroker)?;
    let voters: BTreeMap<u64, NodeInfo> = cluster
        .peers
        .iter()
        .map(|(id, addr)| {
            let info = NodeInfo {
                cluster_addr: addr.to_string(),
                zone: String::new(),
            };
            (*id, info)
        })
        .collect();
    let me = NodeRecord {
        id: cluster.node_id,
        zone: cluster.zone.clone(),
        cluster_addr: cluster.peers[&cluster.node_id].to_string(),
        public_addr: public.to_string(),
        state: NodeState::Active,
        joined_ms: broker_core::clock::now_ms(),
    };
    let start = NodeStart {
        me,
        voters,
        controller_dir: settings.data_dir().join("controller"),
        log_config,
        join: cluster.join,
    };
    let node = ClusterNode::start(Arc::clone(&broker), start)
        .await
        .map_err(|e| fail(&e))?;
    tracing::info!(
        node = cluster.node_id,
        zone = %cluster.zone,
        cluster_port = %cluster.listen,
        "cluster node started"
    );
    Ok(StartedNode {
        broker,
        port: ClusterPort {
            node,
            liveness,
            alerts,
            auth,
            stop,
            task,
        },
    })
}
