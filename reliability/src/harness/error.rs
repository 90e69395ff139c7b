//! [`HarnessError`]: why the cluster runner could not do what it was asked.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use crate::event::NodeId;

/// Why a cluster could not be started, signalled or probed.
#[derive(Debug, Error)]
pub enum HarnessError {
    /// The spec asked for no node at all.
    #[error("a cluster needs at least one node")]
    NoNodes,
    /// The `wharf` binary is not where the spec says.
    #[error("no wharf binary at {path} (build it with `cargo build -p gateway --bin wharf`)")]
    BinaryMissing {
        /// The path given.
        path: PathBuf,
    },
    /// A node id outside `1..=nodes`.
    #[error("no node {node} in a cluster of {nodes}")]
    UnknownNode {
        /// The id asked for.
        node: NodeId,
        /// The cluster's size.
        nodes: usize,
    },
    /// Creating a folder or file, or spawning a process, failed.
    #[error("{action}: {source}")]
    Io {
        /// What the harness was doing.
        action: String,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A node's process exited while the harness waited for it.
    #[error(
        "node {node} exited ({status}) before it was ready; last lines of its log:\n{log_tail}"
    )]
    NodeExited {
        /// The node.
        node: NodeId,
        /// Its exit status.
        status: String,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A node did not answer `/readyz` with 200 in time.
    #[error(
        "node {node} not ready within {waited:?} (last probe: {last_probe}); last lines of its \
         log:\n{log_tail}"
    )]
    NotReady {
        /// The node.
        node: NodeId,
        /// How long the harness waited.
        waited: Duration,
        /// What the last probe saw.
        last_probe: String,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The node is not running, so it cannot be signalled.
    #[error("node {node} is not running")]
    NotRunning {
        /// The node.
        node: NodeId,
    },
    /// The node is already running, so it cannot be started again.
    #[error("node {node} is already running")]
    AlreadyRunning {
        /// The node.
        node: NodeId,
    },
    /// `kill -STOP`/`kill -CONT` failed.
    #[error("kill -{signal} {pid} (node {node}) failed: {detail}")]
    Signal {
        /// The node.
        node: NodeId,
        /// The signal's name.
        signal: &'static str,
        /// The process id.
        pid: u32,
        /// What `kill` said.
        detail: String,
    },
    /// A system command (`ip netns add`, `ip route add blackhole …`) failed or hung.
    #[error("`{command}` failed: {detail}")]
    Command {
        /// The command line.
        command: String,
        /// Its exit status and stderr, or why it did not finish.
        detail: String,
    },
    /// The process the harness started for a node is not the `wharf` binary (a launcher such
    /// as `ip netns exec` that forked instead of exec-ing): signals would miss the node.
    #[error("node {node}: process {pid} runs {found}, not {expected}")]
    NotWharf {
        /// The node.
        node: NodeId,
        /// The process id the harness holds.
        pid: u32,
        /// What `/proc/<pid>/exe` points to.
        found: String,
        /// The `wharf` binary.
        expected: String,
    },
    /// A network fault was asked of a cluster run without network namespaces.
    #[error(
        "network faults need a cluster started with `ClusterSpec::network = Network::Namespaces`"
    )]
    NoNetwork,
    /// Free ports kept clashing with other processes.
    #[error("ports kept clashing after {attempts} attempts; last error: {last}")]
    PortsClash {
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: Box<HarnessError>,
    },
}

impl HarnessError {
    /// An I/O error with what the harness was doing.
    pub(crate) fn io(action: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let action = action.into();
        move |source| HarnessError::Io { action, source }
    }

    /// Whether a node failed because its address was taken by another process.
    pub(crate) fn is_address_clash(&self) -> bool {
        let tail = match self {
            HarnessError::NodeExited { log_tail, .. } | HarnessError::NotReady { log_tail, .. } => {
                log_tail
            }
            _ => return false,
        };
        tail.contains("Address already in use") || tail.contains("AddrInUse")
    }
}
