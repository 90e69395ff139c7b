//! The cluster runner: starts N `wharf serve` processes on loopback ports, each with its own
//! data folder and log file, and injects process faults into them (SIGKILL, SIGSTOP/SIGCONT,
//! restart on the same ports and data). With [`Network::Namespaces`] each node runs in its own
//! network namespace instead, and network partitions can be injected ([`Cluster::split`],
//! [`Cluster::heal`]).
//!
//! # Layout
//! - [`ClusterSpec`] and [`Cluster`] (this file): what to start, and the running cluster.
//! - [`error`]: [`HarnessError`]; a node that exits or never gets ready is an error naming the
//!   node and quoting its log's last lines.
//! - [`node`]: one node's process.
//! - [`ports`]: free loopback ports.
//! - [`probe`]: a blocking `GET /readyz`.
//! - [`netns`]: the private network of namespaces, veth pairs and a bridge.
//! - [`netsplit`]: partition shapes ([`NetSplit`]), as the links they cut.
//! - [`command`]: one `ip` command with a deadline.
//!
//! Nodes are named by their id, `1..=nodes`, as in the cluster flags and in the history.
//! Every wait has a deadline. Dropping a [`Cluster`] SIGKILLs every node; its folder (data and
//! logs) is deleted unless [`Cluster::keep_artifacts`] was called or the thread is panicking
//! (a failing test), in which case its path is printed to stderr.

pub mod command;
pub mod error;
pub mod netns;
pub mod netsplit;
pub mod node;
pub mod ports;
pub mod probe;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::Rng;
use rand::distributions::Alphanumeric;
use tempfile::TempDir;

pub use error::HarnessError;
pub use netns::NetNamespaces;
pub use netsplit::{Link, NetSplit};

/// The `wharf` binary the tests run: `WHARF_BIN`, else `$CARGO_TARGET_DIR/debug/wharf`, else
/// the workspace's `target/debug/wharf` (which `cargo test --workspace` builds first).
pub fn wharf_binary() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("WHARF_BIN") {
        return std::path::PathBuf::from(path);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        std::path::PathBuf::from,
    );
    target.join("debug/wharf")
}
use node::NodeProcess;

use crate::event::NodeId;

/// Default bound on a node's start-up, spawn to `/readyz` 200: a single node opens in well under
/// a second; ten leaves room for a loaded machine and for replaying a log after a crash.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Times a start is retried with fresh ports when a node finds its port taken (another process
/// took it between the harness releasing it and the node binding it).
pub const PORT_ATTEMPTS: u32 = 3;

/// Length of the generated cluster secret; `wharf` requires at least 32 bytes.
pub const CLUSTER_SECRET_LEN: usize = 48;

/// Where the nodes listen and how they reach each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    /// Free ports on `127.0.0.1`, all in the test's own network namespace.
    #[default]
    Loopback,
    /// Each node in its own network namespace on a bridge ([`NetNamespaces`]), listening on
    /// its own address (`--allow-anonymous`, as it is not loopback), so links between nodes
    /// can be cut. Needs root.
    Namespaces,
}

/// What cluster to start.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// How many nodes; 1 starts a single node without cluster flags.
    pub nodes: usize,
    /// Zone per node, cycled (`["a", "b"]` gives a, b, a…); empty: no `--zone` flag.
    pub zones: Vec<String>,
    /// `--fsync` value (`always`, `never`, milliseconds); `None`: wharf's default.
    pub fsync: Option<String>,
    /// Arguments appended to every node's command line.
    pub extra_args: Vec<String>,
    /// The `wharf` binary.
    pub binary: PathBuf,
    /// Bound on each start or restart, spawn to ready.
    pub ready_timeout: Duration,
    /// Loopback ports, or a namespace per node.
    pub network: Network,
    /// Environment variables set on one node's process only, `(node, name, value)`: for a
    /// testing hook such as a skewed clock (`WHARF_TEST_CLOCK_OFFSET_FILE`).
    pub node_env: Vec<(NodeId, String, String)>,
}

impl ClusterSpec {
    /// `nodes` nodes of `binary`, with wharf's defaults and [`DEFAULT_READY_TIMEOUT`].
    pub fn new(binary: impl Into<PathBuf>, nodes: usize) -> Self {
        Self {
            nodes,
            zones: Vec::new(),
            fsync: None,
            extra_args: Vec::new(),
            binary: binary.into(),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            network: Network::Loopback,
            node_env: Vec::new(),
        }
    }
}

/// A node's id and the base URL of its HTTP API (`http://127.0.0.1:P`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The node's id.
    pub node: NodeId,
    /// Its base URL, without a trailing slash.
    pub url: String,
}

/// A running cluster of `wharf` processes.
///
/// Its methods block (spawning, probing, reaping) for at most their deadlines; from async code
/// call them inside `tokio::task::block_in_place` on a multi-threaded runtime.
#[derive(Debug)]
pub struct Cluster {
    spec: ClusterSpec,
    nodes: Vec<NodeProcess>,
    root: Option<TempDir>,
    keep: bool,
    network: Option<NetNamespaces>,
}

impl Cluster {
    /// Starts every node and waits until each answers `/readyz` with 200. A node that exits
    /// first (a refused setting, a taken port) or is not ready within `spec.ready_timeout` is an
    /// error naming it and quoting its log; every node already started is then killed. A port
    /// clash is retried with fresh ports, [`PORT_ATTEMPTS`] times.
    pub fn start(spec: ClusterSpec) -> Result<Cluster, HarnessError> {
        if spec.nodes == 0 {
            return Err(HarnessError::NoNodes);
        }
        if !spec.binary.is_file() {
            return Err(HarnessError::BinaryMissing {
                path: spec.binary.clone(),
            });
        }
        let mut attempt = 1;
        loop {
            match Self::start_once(spec.clone()) {
                Err(error) if error.is_address_clash() && attempt < PORT_ATTEMPTS => attempt += 1,
                Err(error) if error.is_address_clash() => {
                    return Err(HarnessError::PortsClash {
                        attempts: attempt,
                        last: Box::new(error),
                    });
                }
                result => return result,
            }
        }
    }

    fn start_once(spec: ClusterSpec) -> Result<Cluster, HarnessError> {
        let root = tempfile::Builder::new()
            .prefix("wharf-cluster-")
            .tempdir()
            .map_err(HarnessError::io("creating the cluster's temp folder"))?;
        let network = match spec.network {
            Network::Loopback => None,
            Network::Namespaces => Some(NetNamespaces::create(&node_ids(spec.nodes))?),
        };
        let nodes = plan_nodes(&spec, root.path(), network.as_ref())?;
        let mut cluster = Cluster {
            spec,
            nodes,
            root: Some(root),
            keep: false,
            network,
        };
        for node in &mut cluster.nodes {
            node.spawn()?;
        }
        let timeout = cluster.spec.ready_timeout;
        for node in &mut cluster.nodes {
            node.wait_ready(timeout)?;
        }
        Ok(cluster)
    }

    /// The node ids, `1..=nodes`.
    pub fn node_ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// Every node's id and URL, for a workload.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        self.nodes
            .iter()
            .map(|n| Endpoint {
                node: n.id,
                url: url_of(n.public),
            })
            .collect()
    }

    /// The base URL of node `id`'s HTTP API.
    pub fn url(&self, id: NodeId) -> Result<String, HarnessError> {
        Ok(url_of(self.node(id)?.public))
    }

    /// Node `id`'s data folder.
    pub fn data_dir(&self, id: NodeId) -> Result<&Path, HarnessError> {
        Ok(&self.node(id)?.data_dir)
    }

    /// Node `id`'s log file (stdout and stderr, across restarts).
    pub fn log_path(&self, id: NodeId) -> Result<&Path, HarnessError> {
        Ok(&self.node(id)?.log_path)
    }

    /// The folder holding every node's data and log; a good place for the run's history, so
    /// it is kept with them.
    pub fn root(&self) -> &Path {
        self.root.as_ref().map_or(Path::new(""), TempDir::path)
    }

    /// Node `id`'s process id, while it runs.
    pub fn pid(&self, id: NodeId) -> Result<Option<u32>, HarnessError> {
        Ok(self.node(id)?.pid())
    }

    /// Whether node `id`'s process runs (a paused one does).
    pub fn is_running(&mut self, id: NodeId) -> Result<bool, HarnessError> {
        Ok(self.node_mut(id)?.is_running())
    }

    /// SIGKILLs node `id` and waits until its process is reaped.
    pub fn kill9(&mut self, id: NodeId) -> Result<(), HarnessError> {
        self.node_mut(id)?.kill9()
    }

    /// SIGSTOPs node `id`: it keeps its sockets but answers nothing.
    pub fn pause(&mut self, id: NodeId) -> Result<(), HarnessError> {
        self.node_mut(id)?.signal("STOP")
    }

    /// SIGCONTs node `id`.
    pub fn resume(&mut self, id: NodeId) -> Result<(), HarnessError> {
        self.node_mut(id)?.signal("CONT")
    }

    /// Starts node `id` again, on the same ports and data folder, and waits until it is ready
    /// (bounded by the spec's `ready_timeout`). It must not be running.
    pub fn restart(&mut self, id: NodeId) -> Result<(), HarnessError> {
        let timeout = self.spec.ready_timeout;
        let node = self.node_mut(id)?;
        node.spawn()?;
        node.wait_ready(timeout)
    }

    /// Polls node `id`'s `/readyz` until it answers 200, for at most `timeout`.
    pub fn wait_ready(&mut self, id: NodeId, timeout: Duration) -> Result<(), HarnessError> {
        self.node_mut(id)?.wait_ready(timeout)
    }

    /// The last `lines` lines of node `id`'s log.
    pub fn log_tail(&self, id: NodeId, lines: usize) -> Result<String, HarnessError> {
        Ok(self.node(id)?.log_tail(lines))
    }

    /// Cuts the links of `split` (on top of any already cut) and checks the routes are in
    /// place: `Ok` means the partition is installed. Needs [`Network::Namespaces`].
    pub fn split(&mut self, split: &NetSplit) -> Result<(), HarnessError> {
        let links = split.links(&self.node_ids());
        self.network_mut()?.cut(&links)
    }

    /// Removes every cut and checks none is left.
    pub fn heal(&mut self) -> Result<(), HarnessError> {
        self.network_mut()?.heal()
    }

    /// The network of namespaces, when the cluster runs in one.
    pub fn network(&self) -> Option<&NetNamespaces> {
        self.network.as_ref()
    }

    fn network_mut(&mut self) -> Result<&mut NetNamespaces, HarnessError> {
        self.network.as_mut().ok_or(HarnessError::NoNetwork)
    }

    /// Keeps the data folders and logs after the cluster is dropped (for a failing run); the
    /// path is printed then.
    pub fn keep_artifacts(&mut self) {
        self.keep = true;
    }

    fn node(&self, id: NodeId) -> Result<&NodeProcess, HarnessError> {
        let nodes = self.nodes.len();
        index_of(id, nodes)
            .and_then(|i| self.nodes.get(i))
            .ok_or(HarnessError::UnknownNode { node: id, nodes })
    }

    fn node_mut(&mut self, id: NodeId) -> Result<&mut NodeProcess, HarnessError> {
        let nodes = self.nodes.len();
        index_of(id, nodes)
            .and_then(|i| self.nodes.get_mut(i))
            .ok_or(HarnessError::UnknownNode { node: id, nodes })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if node.is_running() {
                let _ = node.kill9();
            }
        }
        let keep = self.keep || std::thread::panicking();
        if let Some(root) = self.root.take().filter(|_| keep) {
            let path = root.keep();
            eprintln!(
                "wharf harness: kept node data and logs in {}",
                path.display()
            );
        }
    }
}

/// The index in `0..nodes` of node `id`.
fn index_of(id: NodeId, nodes: usize) -> Option<usize> {
    let index = usize::try_from(id).ok()?.checked_sub(1)?;
    (index < nodes).then_some(index)
}

fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// The ids of a cluster of `nodes`: `1..=nodes`.
fn node_ids(nodes: usize) -> Vec<NodeId> {
    (1..=nodes as NodeId).collect()
}

/// Each node's public (HTTP) and cluster address: free loopback ports, or the fixed ports on
/// each node's own address in `network`.
fn plan_addrs(
    spec: &ClusterSpec,
    network: Option<&NetNamespaces>,
) -> Result<(Vec<SocketAddr>, Vec<SocketAddr>), HarnessError> {
    if let Some(network) = network {
        let at = |id, port| SocketAddr::new(network.address(id).into(), port);
        return Ok(node_ids(spec.nodes)
            .into_iter()
            .map(|id| (at(id, netns::HTTP_PORT), at(id, netns::CLUSTER_PORT)))
            .unzip());
    }
    let clustered = spec.nodes > 1;
    let port_count = if clustered { 2 * spec.nodes } else { 1 };
    let mut addrs = ports::free_loopback_addrs(port_count)?;
    let cluster = addrs.split_off(spec.nodes);
    Ok((addrs, cluster))
}

/// Each node's ports, folders and command line, not yet started.
fn plan_nodes(
    spec: &ClusterSpec,
    root: &Path,
    network: Option<&NetNamespaces>,
) -> Result<Vec<NodeProcess>, HarnessError> {
    let clustered = spec.nodes > 1;
    let (public, cluster) = plan_addrs(spec, network)?;
    let secret = cluster_secret();
    let peers = peers_flag(&cluster);
    (0..spec.nodes)
        .map(|i| {
            let id = (i + 1) as NodeId;
            let folder = root.join(format!("node-{id}"));
            let data_dir = folder.join("data");
            std::fs::create_dir_all(&data_dir)
                .map_err(HarnessError::io(format!("creating {}", data_dir.display())))?;
            let mut args = vec![
                "serve".to_owned(),
                "--listen".to_owned(),
                public[i].to_string(),
                "--data-dir".to_owned(),
                data_dir.display().to_string(),
            ];
            if let Some(fsync) = &spec.fsync {
                args.extend(["--fsync".to_owned(), fsync.clone()]);
            }
            if clustered {
                args.extend(cluster_args(spec, i, cluster[i], &peers, &secret));
            }
            args.extend(spec.extra_args.iter().cloned());
            let log_path = folder.join("wharf.log");
            let env: Vec<(String, String)> = spec
                .node_env
                .iter()
                .filter(|(node, _, _)| *node == id)
                .map(|(_, name, value)| (name.clone(), value.clone()))
                .collect();
            let Some(network) = network else {
                let binary = spec.binary.clone();
                return Ok(
                    NodeProcess::new(id, public[i], data_dir, log_path, binary, args).with_env(env),
                );
            };
            args.push("--allow-anonymous".to_owned());
            let mut launch = vec![
                "netns".to_owned(),
                "exec".to_owned(),
                network.namespace(id),
                spec.binary.display().to_string(),
            ];
            launch.extend(args);
            let ip = PathBuf::from(NetNamespaces::ip_program());
            Ok(
                NodeProcess::new(id, public[i], data_dir, log_path, ip, launch)
                    .expecting_exe(spec.binary.clone())
                    .with_env(env),
            )
        })
        .collect()
}

/// The cluster flags of the node at index `i`.
fn cluster_args(
    spec: &ClusterSpec,
    i: usize,
    listen: SocketAddr,
    peers: &str,
    secret: &str,
) -> Vec<String> {
    let mut args = vec![
        "--node-id".to_owned(),
        (i + 1).to_string(),
        "--cluster-listen".to_owned(),
        listen.to_string(),
        "--peers".to_owned(),
        peers.to_owned(),
        "--cluster-secret".to_owned(),
        secret.to_owned(),
    ];
    if !spec.zones.is_empty() {
        args.extend([
            "--zone".to_owned(),
            spec.zones[i % spec.zones.len()].clone(),
        ]);
    }
    args
}

/// `1=IP:port,2=IP:port,…` over the cluster addresses.
fn peers_flag(cluster: &[SocketAddr]) -> String {
    cluster
        .iter()
        .enumerate()
        .map(|(i, addr)| format!("{}={addr}", i + 1))
        .collect::<Vec<_>>()
        .join(",")
}

fn cluster_secret() -> String {
    rand::thread_rng()
        .sample_iter(&Alphanumeric)
        .take(CLUSTER_SECRET_LEN)
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_run_from_one_to_n() {
        assert_eq!(index_of(1, 3), Some(0));
        assert_eq!(index_of(3, 3), Some(2));
        assert_eq!(index_of(0, 3), None);
        assert_eq!(index_of(4, 3), None);
    }

    #[test]
    fn a_single_node_gets_no_cluster_flags() {
        let dir = tempfile::tempdir().expect("dir");
        let nodes = plan_nodes(&ClusterSpec::new("/bin/true", 1), dir.path(), None).expect("plan");
        let args = nodes[0].args_for_test();
        assert_eq!(args[0], "serve");
        assert!(
            !args
                .iter()
                .any(|a| a.starts_with("--node-id") || a == "--peers")
        );
    }

    #[test]
    fn three_nodes_name_every_peer_and_cycle_the_zones() {
        let dir = tempfile::tempdir().expect("dir");
        let mut spec = ClusterSpec::new("/bin/true", 3);
        spec.zones = vec!["a".into(), "b".into()];
        let nodes = plan_nodes(&spec, dir.path(), None).expect("plan");
        let flag = |node: &NodeProcess, name: &str| {
            let args = node.args_for_test();
            let at = args.iter().position(|a| a == name).expect("flag present");
            args[at + 1].clone()
        };
        assert_eq!(flag(&nodes[2], "--node-id"), "3");
        assert_eq!(flag(&nodes[2], "--zone"), "a");
        assert_eq!(flag(&nodes[1], "--zone"), "b");
        assert_eq!(flag(&nodes[0], "--peers"), flag(&nodes[2], "--peers"));
        assert_eq!(flag(&nodes[0], "--peers").split(',').count(), 3);
        assert!(flag(&nodes[0], "--cluster-secret").len() >= 32);
    }
}
