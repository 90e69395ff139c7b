//! [`NetNamespaces`]: a private network for a cluster: one network namespace per node, each
//! joined by a veth pair to a Linux bridge in the root namespace, which has an address on the
//! bridge so the test's clients reach every node. Partitions are blackhole routes inside the
//! namespaces ([`NetNamespaces::cut`], [`NetNamespaces::heal`]; see [`super::netsplit`]).
//!
//! Names carry a random run id so parallel runs do not collide: namespaces `wh<id>-<n>`, the
//! bridge `wh<id>-br`, veth ends `wh<id>-v<n>` (root) and `wh<id>-p<n>` (in the namespace),
//! all within Linux's 15-byte interface names. The subnet is `10.<x>.<y>.0/24` with `<x>`,
//! `<y>` random and checked against the root namespace's routes; node `n` is `10.<x>.<y>.n`,
//! the root namespace [`CLIENT_HOST`]. Every command has a deadline ([`IP_TIMEOUT`]); a failed
//! one is a [`HarnessError::Command`] quoting its stderr. Dropping removes everything created
//! (the namespaces, which takes their veth pairs along, and the bridge), also while a test
//! panics. A test process killed outright leaves them behind: `ip netns del wh<id>-<n>` and
//! `ip link del wh<id>-br` remove them. Needs root (`CAP_NET_ADMIN`).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;

use rand::Rng;

use super::command;
use super::error::HarnessError;
use super::netsplit::Link;
use crate::event::NodeId;

/// Deadline of one `ip` command: it answers within milliseconds; five seconds covers a loaded
/// machine, and a hang becomes an error instead of a stuck test.
pub const IP_TIMEOUT: Duration = Duration::from_secs(5);

/// The nodes' HTTP port: each node has its own address, so one fixed port cannot clash.
pub const HTTP_PORT: u16 = 8080;

/// The nodes' cluster port, fixed for the same reason.
pub const CLUSTER_PORT: u16 = 7000;

/// The root namespace's host number on the bridge (nodes are 1 to 253).
pub const CLIENT_HOST: u8 = 254;

/// Most nodes a run may have: host numbers 1 to 253 of the /24.
pub const MAX_NODES: usize = 253;

/// Subnets tried before giving up when the random ones overlap the root namespace's routes.
const SUBNET_ATTEMPTS: u32 = 20;

/// Random characters of the run id (36⁴ ids: two parallel runs picking the same one is a
/// failed `ip netns add`, not a shared network).
const RUN_ID_CHARS: usize = 4;

/// Where `ip` is looked for before falling back to `PATH`.
const IP_PATHS: [&str; 4] = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"];

/// The network of one cluster run: its namespaces, bridge and cut links.
#[derive(Debug)]
pub struct NetNamespaces {
    run: String,
    subnet: [u8; 3],
    nodes: Vec<NodeId>,
    bridge: Option<String>,
    namespaces: Vec<String>,
    cut: BTreeSet<Link>,
}

impl NetNamespaces {
    /// Creates the bridge and one namespace per node, each with `lo` up and its veth end
    /// addressed and up. A failure removes what was created and quotes the command.
    pub fn create(nodes: &[NodeId]) -> Result<NetNamespaces, HarnessError> {
        if let Some(bad) = nodes.iter().find(|n| **n == 0 || **n > MAX_NODES as u64) {
            return Err(HarnessError::Command {
                command: "planning the node namespaces".to_owned(),
                detail: format!("node id {bad} outside 1..={MAX_NODES}"),
            });
        }
        let mut network = NetNamespaces {
            run: run_id(),
            subnet: free_subnet()?,
            nodes: nodes.to_vec(),
            bridge: None,
            namespaces: Vec::new(),
            cut: BTreeSet::new(),
        };
        network.add_bridge()?;
        for &node in nodes {
            network.add_node(node)?;
        }
        Ok(network)
    }

    fn add_bridge(&mut self) -> Result<(), HarnessError> {
        let bridge = format!("{}-br", self.run);
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        self.bridge = Some(bridge.clone());
        ip(&["link", "set", &bridge, "up"])?;
        let client = format!("{}/24", self.client_address());
        ip(&["addr", "add", &client, "dev", &bridge])?;
        Ok(())
    }

    fn add_node(&mut self, node: NodeId) -> Result<(), HarnessError> {
        let ns = self.namespace(node);
        let bridge = format!("{}-br", self.run);
        let (root_end, ns_end) = (format!("{}-v{node}", self.run), self.inner_end(node));
        ip(&["netns", "add", &ns])?;
        self.namespaces.push(ns.clone());
        ip(&[
            "link", "add", &root_end, "type", "veth", "peer", "name", &ns_end, "netns", &ns,
        ])?;
        ip(&["link", "set", &root_end, "master", &bridge])?;
        ip(&["link", "set", &root_end, "up"])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        let address = format!("{}/24", self.address(node));
        ip(&["-n", &ns, "addr", "add", &address, "dev", &ns_end])?;
        ip(&["-n", &ns, "link", "set", &ns_end, "up"])?;
        Ok(())
    }

    /// Node `node`'s namespace, `wh<id>-<node>`.
    pub fn namespace(&self, node: NodeId) -> String {
        format!("{}-{node}", self.run)
    }

    fn inner_end(&self, node: NodeId) -> String {
        format!("{}-p{node}", self.run)
    }

    /// Node `node`'s address, `10.<x>.<y>.<node>`.
    pub fn address(&self, node: NodeId) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, u8::try_from(node).unwrap_or(0))
    }

    /// The root namespace's address on the bridge, where the test's clients come from.
    pub fn client_address(&self) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, CLIENT_HOST)
    }

    /// The `ip` program, for `ip netns exec <namespace> wharf …`.
    pub fn ip_program() -> &'static str {
        IP_PATHS
            .into_iter()
            .find(|p| Path::new(p).is_file())
            .unwrap_or("ip")
    }

    /// The links cut now.
    pub fn cut_links(&self) -> &BTreeSet<Link> {
        &self.cut
    }

    /// Cuts `links` (adding a blackhole route to `to` in `from`'s namespace for each one not
    /// cut yet), then reads the routes back: `Ok` only if every one is in place.
    pub fn cut(&mut self, links: &BTreeSet<Link>) -> Result<(), HarnessError> {
        for link in links.difference(&self.cut.clone()) {
            let ns = self.namespace(link.from);
            let target = format!("{}/32", self.address(link.to));
            ip(&["-n", &ns, "route", "add", "blackhole", &target])?;
            self.cut.insert(*link);
        }
        let installed = self.blackholes()?;
        match links.difference(&installed).next() {
            None => Ok(()),
            Some(missing) => Err(HarnessError::Command {
                command: format!(
                    "ip -n {} route show type blackhole",
                    self.namespace(missing.from)
                ),
                detail: format!("no blackhole route to node {} after adding it", missing.to),
            }),
        }
    }

    /// Removes every blackhole route this network added, then reads the routes back: `Ok` only
    /// if none is left.
    pub fn heal(&mut self) -> Result<(), HarnessError> {
        for link in self.cut.clone() {
            let ns = self.namespace(link.from);
            let target = format!("{}/32", self.address(link.to));
            ip(&["-n", &ns, "route", "del", "blackhole", &target])?;
            self.cut.remove(&link);
        }
        match self.blackholes()?.into_iter().next() {
            None => Ok(()),
            Some(left) => Err(HarnessError::Command {
                command: format!(
                    "ip -n {} route show type blackhole",
                    self.namespace(left.from)
                ),
                detail: format!(
                    "a blackhole route to node {} is left after healing",
                    left.to
                ),
            }),
        }
    }

    /// The links whose blackhole routes are in the namespaces now, as `ip route` lists them.
    pub fn blackholes(&self) -> Result<BTreeSet<Link>, HarnessError> {
        let mut links = BTreeSet::new();
        for &from in &self.nodes {
            let ns = self.namespace(from);
            let routes = ip(&["-4", "-n", &ns, "route", "show", "type", "blackhole"])?;
            for line in routes.lines() {
                let target = line.split_whitespace().nth(1).unwrap_or_default();
                let target = target.trim_end_matches("/32");
                if let Some(to) = self
                    .nodes
                    .iter()
                    .find(|n| self.address(**n).to_string() == target)
                {
                    links.insert(Link { from, to: *to });
                }
            }
        }
        Ok(links)
    }
}

impl Drop for NetNamespaces {
    fn drop(&mut self) {
        let deleted = self
            .namespaces
            .iter()
            .map(|ns| ip(&["netns", "del", ns]))
            .chain(self.bridge.iter().map(|br| ip(&["link", "del", br])));
        for result in deleted {
            if let Err(error) = result {
                eprintln!("wharf harness: cleaning the network up: {error}");
            }
        }
    }
}

/// Runs `ip args…` within [`IP_TIMEOUT`].
fn ip(args: &[&str]) -> Result<String, HarnessError> {
    command::run(NetNamespaces::ip_program(), args, IP_TIMEOUT)
}

fn run_id() -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::thread_rng();
    let id: String = (0..RUN_ID_CHARS)
        .map(|_| char::from(CHARS[rng.gen_range(0..CHARS.len())]))
        .collect();
    format!("wh{id}")
}

/// A random `10.<x>.<y>` whose /24 overlaps no route of the root namespace.
fn free_subnet() -> Result<[u8; 3], HarnessError> {
    let routes = ip(&["-4", "route", "show", "table", "all"])?;
    let taken: Vec<(Ipv4Addr, u8)> = routes.lines().filter_map(route_prefix).collect();
    let mut rng = rand::thread_rng();
    for _ in 0..SUBNET_ATTEMPTS {
        let subnet = [10, rng.gen_range(100..=199), rng.gen_range(0..=255)];
        let ours = (Ipv4Addr::new(subnet[0], subnet[1], subnet[2], 0), 24);
        if !taken.iter().any(|route| overlaps(*route, ours)) {
            return Ok(subnet);
        }
    }
    Err(HarnessError::Command {
        command: "ip -4 route show table all".to_owned(),
        detail: format!("{SUBNET_ATTEMPTS} random 10.x.y.0/24 subnets all overlap a route"),
    })
}

/// The destination prefix of one `ip route` line (`default` is 0.0.0.0/0; a route type such
/// as `blackhole` or `local` may come first); `None` for a line naming none.
fn route_prefix(line: &str) -> Option<(Ipv4Addr, u8)> {
    line.split_whitespace().take(2).find_map(|word| {
        if word == "default" {
            return Some((Ipv4Addr::UNSPECIFIED, 0));
        }
        let (addr, len) = word.split_once('/').unwrap_or((word, "32"));
        Some((addr.parse().ok()?, len.parse().ok().filter(|l| *l <= 32)?))
    })
}

/// Whether two prefixes share an address, leaving out the default route (every subnet is
/// "inside" it, yet a more specific route wins).
fn overlaps((a, a_len): (Ipv4Addr, u8), (b, b_len): (Ipv4Addr, u8)) -> bool {
    let len = a_len.min(b_len);
    if len == 0 {
        return false;
    }
    let mask = u32::MAX << (32 - u32::from(len));
    u32::from(a) & mask == u32::from(b) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_lines_give_their_prefix() {
        let v4 = |s: &str| s.parse::<Ipv4Addr>().expect("an address");
        assert_eq!(
            route_prefix("default via 192.0.2.1 dev eth0"),
            Some((Ipv4Addr::UNSPECIFIED, 0))
        );
        assert_eq!(
            route_prefix("192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2"),
            Some((v4("192.0.2.0"), 24))
        );
        assert_eq!(
            route_prefix("local 127.0.0.1 dev lo table local"),
            Some((v4("127.0.0.1"), 32))
        );
        assert_eq!(route_prefix(""), None);
    }

    #[test]
    fn prefixes_overlap_when_they_share_addresses_and_the_default_route_does_not_count() {
        let p = |s: &str, len| (s.parse::<Ipv4Addr>().expect("an address"), len);
        assert!(overlaps(p("10.0.0.0", 8), p("10.150.3.0", 24)));
        assert!(overlaps(p("10.150.3.7", 32), p("10.150.3.0", 24)));
        assert!(!overlaps(p("10.150.4.0", 24), p("10.150.3.0", 24)));
        assert!(!overlaps(p("0.0.0.0", 0), p("10.150.3.0", 24)));
    }

    #[test]
    fn every_interface_name_fits_linux_fifteen_bytes() {
        let id = run_id();
        for name in [
            format!("{id}-br"),
            format!("{id}-v{MAX_NODES}"),
            format!("{id}-p{MAX_NODES}"),
        ] {
            assert!(name.len() <= 15, "{name}");
        }
    }
}
