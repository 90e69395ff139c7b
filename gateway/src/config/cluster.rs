//! The cluster settings of `wharf serve`: which node this is, its zone, the cluster port and
//! the initial voters, and the shared secret peers prove. Without any of them the server is a
//! single node, as before; with any of them, all but `zone` are required.
//!
//! `peers` lists every initial voter as `id=IP:port` (the cluster address), this node
//! included: `1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003`, or a TOML table
//! `peers = { 1 = "127.0.0.1:7001", … }`. The cluster port is never the public one. A node
//! added later sets `join` and lists running nodes to reach, and itself.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::error::{ConfigError, invalid};
use super::values::parse_number;

/// Zone of a node that names none.
pub const DEFAULT_ZONE: &str = "default";
/// Shortest cluster secret: 32 bytes, as an HS256 key, so it cannot be guessed.
pub const MIN_CLUSTER_SECRET_BYTES: usize = 32;
/// Largest zone name.
pub const MAX_ZONE_LEN: usize = 64;
/// Most voters named in `peers`: a Raft group of more than 9 voters only slows commits.
pub const MAX_PEERS: usize = 9;
/// Default of `preferred_leader_after_ms`: a returned node takes its partitions back ten
/// seconds after it is live and caught up. Long enough that a node flapping in and out is
/// not handed leaderships it loses again (each move stops the partition's writes for about
/// half a second); short beside Kafka's five-minute check, since a node here leads only its
/// share and the survivors carry the rest meanwhile.
pub(super) const DEFAULT_PREFERRED_LEADER_AFTER_MS: u64 = 10_000;
/// Longest `preferred_leader_after_ms`: a day.
pub(super) const MAX_PREFERRED_LEADER_AFTER_MS: u64 = 86_400_000;

/// The cluster flags; each falls back to its env var, then to the file key of the same name.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClusterArgs {
    /// This node's id in the cluster, 1 or more; turns cluster mode on.
    #[arg(long, env = "WHARF_NODE_ID")]
    pub node_id: Option<String>,
    /// This node's zone (data centre, rack) [default: default].
    #[arg(long, env = "WHARF_ZONE")]
    pub zone: Option<String>,
    /// Address of the cluster port, IP:port: peers only, never the public port.
    #[arg(long, env = "WHARF_CLUSTER_LISTEN")]
    pub cluster_listen: Option<String>,
    /// The initial voters' cluster addresses, this node's included: `1=IP:port,2=IP:port,…`.
    #[arg(long, env = "WHARF_PEERS")]
    pub peers: Option<String>,
    /// Secret every peer presents on the cluster port (at least 32 bytes).
    #[arg(long, env = "WHARF_CLUSTER_SECRET", hide_env_values = true)]
    pub cluster_secret: Option<String>,
    /// A file holding the cluster secret, instead of `--cluster-secret`.
    #[arg(long, env = "WHARF_CLUSTER_SECRET_FILE")]
    pub cluster_secret_file: Option<String>,
    /// Join a running cluster (`--join` or `--join true`): `peers` names running nodes to
    /// reach, and this one; the controller adds this node as a learner, then a voter. Without
    /// it a brand-new node forms the cluster with `peers` as its initial voters.
    #[arg(long, env = "WHARF_JOIN", num_args = 0..=1, default_missing_value = "true")]
    pub join: Option<String>,
    /// How long a partition's preferred leader (placement spreads them evenly) must be live
    /// and caught up before the partition's leadership goes back to it on its own; 0 turns
    /// automatic preferred-leader election off [default: 10000].
    #[arg(long, env = "WHARF_PREFERRED_LEADER_AFTER_MS")]
    pub preferred_leader_after_ms: Option<String>,
}

/// The cluster settings' file keys.
pub(super) const CLUSTER_KEYS: &[&str] = &[
    "node_id",
    "zone",
    "cluster_listen",
    "peers",
    "cluster_secret",
    "cluster_secret_file",
    "join",
    "preferred_leader_after_ms",
];

impl ClusterArgs {
    /// These flags over the cluster keys of a config file (taken out of `file`).
    pub(super) fn merge(self, file: &mut toml::Table) -> ClusterArgs {
        let mut take = |key: &str| file.remove(key).map(file_text);
        ClusterArgs {
            node_id: self.node_id.or_else(|| take("node_id")),
            zone: self.zone.or_else(|| take("zone")),
            cluster_listen: self.cluster_listen.or_else(|| take("cluster_listen")),
            peers: self.peers.or_else(|| take("peers")),
            cluster_secret: self.cluster_secret.or_else(|| take("cluster_secret")),
            cluster_secret_file: self
                .cluster_secret_file
                .or_else(|| take("cluster_secret_file")),
            join: self.join.or_else(|| take("join")),
            preferred_leader_after_ms: self
                .preferred_leader_after_ms
                .or_else(|| take("preferred_leader_after_ms")),
        }
    }

    fn any(&self) -> bool {
        [
            &self.node_id,
            &self.zone,
            &self.cluster_listen,
            &self.peers,
            &self.cluster_secret,
            &self.cluster_secret_file,
            &self.join,
            &self.preferred_leader_after_ms,
        ]
        .iter()
        .any(|v| v.is_some())
    }
}

/// A file value as text; a `peers` table becomes `id=addr,…`.
fn file_text(value: toml::Value) -> String {
    match value {
        toml::Value::Table(table) => table
            .into_iter()
            .map(|(id, addr)| format!("{id}={}", super::file::value_text(addr)))
            .collect::<Vec<_>>()
            .join(","),
        other => super::file::value_text(other),
    }
}

/// The secret peers present, never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterSecret(String);

impl ClusterSecret {
    /// The secret's bytes.
    pub fn expose(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterSecret(<redacted>)")
    }
}

/// Validated cluster settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    /// This node's id.
    pub node_id: u64,
    /// This node's zone.
    pub zone: String,
    /// Where the cluster port listens.
    pub listen: SocketAddr,
    /// The initial voters' cluster addresses by node id, this node's included.
    pub peers: BTreeMap<u64, SocketAddr>,
    /// The shared secret.
    pub secret: ClusterSecret,
    /// Whether this node joins a running cluster instead of forming it with `peers`.
    pub join: bool,
    /// How long a preferred leader must be fit before its partitions go back to it; `None`:
    /// never on its own (`POST /v1/cluster/rebalance` still moves them).
    pub preferred_leader_after: Option<std::time::Duration>,
}

/// Validates the cluster settings: `None` for a single node (no cluster setting given).
/// `public` is the public listen address, which the cluster port must not share.
pub(super) fn freeze_cluster(
    args: ClusterArgs,
    public: SocketAddr,
) -> Result<Option<ClusterSettings>, ConfigError> {
    if !args.any() {
        return Ok(None);
    }
    let required = |setting: &'static str, value: Option<String>| {
        value.ok_or_else(|| invalid(setting, "", "required once any cluster setting is given"))
    };
    let node_text = required("node_id", args.node_id)?;
    let node_id = parse_number::<u64>("node_id", &node_text)?;
    if node_id == 0 {
        return Err(invalid("node_id", &node_text, "must be 1 or more"));
    }
    let zone = zone(args.zone)?;
    let listen_text = required("cluster_listen", args.cluster_listen)?;
    let listen: SocketAddr = listen_text
        .trim()
        .parse()
        .map_err(|_| invalid("cluster_listen", &listen_text, "expected IP:port"))?;
    if listen.port() == public.port()
        && (listen.ip() == public.ip()
            || listen.ip().is_unspecified()
            || public.ip().is_unspecified())
    {
        return Err(invalid(
            "cluster_listen",
            &listen_text,
            format!("must not be the public address {public}"),
        ));
    }
    let peers = peers(&required("peers", args.peers)?)?;
    check_self_in_peers(node_id, listen, &peers)?;
    let secret = secret(args.cluster_secret, args.cluster_secret_file)?;
    let join = match args.join.as_deref().map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(invalid("join", other, "expected true or false")),
    };
    if join && peers.len() < 2 {
        return Err(invalid(
            "peers",
            "",
            "a joining node needs a running node to reach besides itself",
        ));
    }
    let after_ms = super::values::ranged(
        "preferred_leader_after_ms",
        args.preferred_leader_after_ms,
        DEFAULT_PREFERRED_LEADER_AFTER_MS,
        0..=MAX_PREFERRED_LEADER_AFTER_MS,
    )?;
    Ok(Some(ClusterSettings {
        node_id,
        zone,
        listen,
        peers,
        secret,
        join,
        preferred_leader_after: (after_ms > 0).then(|| std::time::Duration::from_millis(after_ms)),
    }))
}

fn zone(text: Option<String>) -> Result<String, ConfigError> {
    let zone = text.unwrap_or_else(|| DEFAULT_ZONE.to_owned());
    let valid = !zone.is_empty()
        && zone.len() <= MAX_ZONE_LEN
        && zone
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if !valid {
        return Err(invalid(
            "zone",
            &zone,
            format!("expected 1 to {MAX_ZONE_LEN} of A-Z a-z 0-9 . _ -"),
        ));
    }
    Ok(zone)
}

/// `id=IP:port,…` into a map, each id once, each address once.
fn peers(text: &str) -> Result<BTreeMap<u64, SocketAddr>, ConfigError> {
    let mut peers = BTreeMap::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (id_text, addr_text) = item
            .split_once('=')
            .ok_or_else(|| invalid("peers", item, "expected id=IP:port"))?;
        let id = parse_number::<u64>("peers", id_text)?;
        let addr: SocketAddr = addr_text
            .trim()
            .parse()
            .map_err(|_| invalid("peers", item, "expected id=IP:port"))?;
        if id == 0 || addr.ip().is_unspecified() || addr.port() == 0 {
            return Err(invalid(
                "peers",
                item,
                "ids are 1 or more; addresses are reachable IP:port",
            ));
        }
        if peers.values().any(|a| *a == addr) || peers.insert(id, addr).is_some() {
            return Err(invalid("peers", item, "each node id and address once"));
        }
    }
    if peers.is_empty() || peers.len() > MAX_PEERS {
        return Err(invalid(
            "peers",
            text,
            format!("expected 1 to {MAX_PEERS} voters"),
        ));
    }
    Ok(peers)
}

/// This node is one of the voters, at the address its cluster port listens on.
fn check_self_in_peers(
    node_id: u64,
    listen: SocketAddr,
    peers: &BTreeMap<u64, SocketAddr>,
) -> Result<(), ConfigError> {
    let Some(own) = peers.get(&node_id) else {
        return Err(invalid(
            "peers",
            &node_id.to_string(),
            "must name this node (node_id) with its cluster address",
        ));
    };
    let same = *own == listen || (listen.ip().is_unspecified() && own.port() == listen.port());
    if !same {
        return Err(invalid(
            "peers",
            &own.to_string(),
            format!("this node's entry must match cluster_listen {listen}"),
        ));
    }
    Ok(())
}

fn secret(text: Option<String>, file: Option<String>) -> Result<ClusterSecret, ConfigError> {
    let secret = match (text, file) {
        (Some(_), Some(path)) => {
            return Err(invalid(
                "cluster_secret_file",
                &path,
                "give cluster_secret or cluster_secret_file, not both",
            ));
        }
        (Some(text), None) => text,
        (None, Some(path)) => std::fs::read_to_string(&path)
            .map_err(|e| invalid("cluster_secret_file", &path, e.to_string()))?
            .trim_end_matches(['\n', '\r'])
            .to_owned(),
        (None, None) => {
            return Err(invalid(
                "cluster_secret",
                "",
                "required once any cluster setting is given (or cluster_secret_file)",
            ));
        }
    };
    if secret.len() < MIN_CLUSTER_SECRET_BYTES {
        return Err(invalid(
            "cluster_secret",
            "<redacted>",
            format!("must be at least {MIN_CLUSTER_SECRET_BYTES} bytes"),
        ));
    }
    Ok(ClusterSecret(secret))
}

#[cfg(test)]
mod tests;
