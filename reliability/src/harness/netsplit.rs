//! [`NetSplit`]: the shape of a network partition between cluster nodes, as a pure description:
//! which directed links lose their packets ([`NetSplit::links`]) and which nodes are left
//! without a majority ([`NetSplit::minority`]). [`super::Cluster::split`] installs one.
//!
//! A cut [`Link`] `from → to` is a blackhole route to `to`'s address inside `from`'s network
//! namespace: everything `from` sends to `to` vanishes. TCP needs both directions, so a one-way
//! cut still breaks every connection between the two, only the timing differs: `from`'s own
//! connects to `to` fail at once (a blackhole route refuses a local send with `EINVAL`) and its
//! established connections to `to` stall until their timeouts; `to`'s connects to `from` reach
//! it, but the SYN-ACK vanishes, so they hang until `to`'s connect timeout. A symmetric cut is
//! both directed links. The test client (the root namespace) is never cut: clients on both
//! sides of a partition keep reaching every node.

use std::collections::BTreeSet;

use crate::event::NodeId;

/// A directed link between two nodes: packets `from → to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    /// The sending node, in whose namespace the route is.
    pub from: NodeId,
    /// The node whose address is blackholed.
    pub to: NodeId,
}

/// The shape of a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetSplit {
    /// One node cut from every other, both ways.
    Isolate(NodeId),
    /// Two groups, every link between them cut both ways; nodes listed in neither are cut
    /// from no one.
    Halves(Vec<NodeId>, Vec<NodeId>),
    /// `a` and `c` cut from each other both ways; `b` (the bridge) talks to both.
    Bridge {
        /// One end.
        a: NodeId,
        /// The node both ends reach.
        b: NodeId,
        /// The other end.
        c: NodeId,
    },
    /// Packets from `from` to `to` vanish; `to → from` is left open.
    Asymmetric {
        /// The node whose packets vanish.
        from: NodeId,
        /// The node they were sent to.
        to: NodeId,
    },
}

impl NetSplit {
    /// `node` cut from every other node.
    pub fn isolate(node: NodeId) -> Self {
        NetSplit::Isolate(node)
    }

    /// Every link between `a` and `b` cut both ways.
    pub fn halves(a: &[NodeId], b: &[NodeId]) -> Self {
        NetSplit::Halves(a.to_vec(), b.to_vec())
    }

    /// `a`–`c` cut both ways, `b` talking to both.
    pub fn bridge(a: NodeId, b: NodeId, c: NodeId) -> Self {
        NetSplit::Bridge { a, b, c }
    }

    /// Packets `from → to` vanish.
    pub fn asymmetric(from: NodeId, to: NodeId) -> Self {
        NetSplit::Asymmetric { from, to }
    }

    /// A short name for the history's fault events: `isolate`, `halves`, `bridge`,
    /// `asymmetric`.
    pub fn kind(&self) -> &'static str {
        match self {
            NetSplit::Isolate(_) => "isolate",
            NetSplit::Halves(..) => "halves",
            NetSplit::Bridge { .. } => "bridge",
            NetSplit::Asymmetric { .. } => "asymmetric",
        }
    }

    /// The directed links cut among `nodes` (links naming a node outside `nodes`, and a node's
    /// link to itself, are left out).
    pub fn links(&self, nodes: &[NodeId]) -> BTreeSet<Link> {
        let pairs: Vec<(NodeId, NodeId)> = match self {
            NetSplit::Isolate(n) => nodes.iter().map(|o| (*n, *o)).collect(),
            NetSplit::Halves(a, b) => a
                .iter()
                .flat_map(|x| b.iter().map(move |y| (*x, *y)))
                .collect(),
            NetSplit::Bridge { a, c, .. } => vec![(*a, *c)],
            NetSplit::Asymmetric { from, to } => {
                return one_way(*from, *to, nodes).into_iter().collect();
            }
        };
        pairs
            .into_iter()
            .flat_map(|(x, y)| one_way(x, y, nodes).into_iter().chain(one_way(y, x, nodes)))
            .collect()
    }

    /// The nodes of `nodes` that cannot reach a majority of them (themselves included) while
    /// the split holds, so cannot have any write committed: the minority side, whose acks
    /// during the split would be a bug. A link cut one way counts as cut both ways (TCP needs
    /// both).
    pub fn minority(&self, nodes: &[NodeId]) -> Vec<NodeId> {
        let cut = self.links(nodes);
        let majority = nodes.len() / 2 + 1;
        nodes
            .iter()
            .copied()
            .filter(|n| {
                let reached = nodes
                    .iter()
                    .filter(|o| {
                        !cut.contains(&Link { from: *n, to: **o })
                            && !cut.contains(&Link { from: **o, to: *n })
                    })
                    .count();
                reached < majority
            })
            .collect()
    }
}

/// The link `from → to` if both are among `nodes` and differ.
fn one_way(from: NodeId, to: NodeId, nodes: &[NodeId]) -> Option<Link> {
    (from != to && nodes.contains(&from) && nodes.contains(&to)).then_some(Link { from, to })
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE: [NodeId; 3] = [1, 2, 3];

    fn link(from: NodeId, to: NodeId) -> Link {
        Link { from, to }
    }

    #[test]
    fn an_isolated_node_is_cut_both_ways_from_every_other_and_is_the_minority() {
        let split = NetSplit::isolate(2);
        let links: Vec<Link> = split.links(&THREE).into_iter().collect();
        assert_eq!(links, [link(1, 2), link(2, 1), link(2, 3), link(3, 2)]);
        assert_eq!(split.minority(&THREE), [2]);
    }

    #[test]
    fn halves_cut_every_link_across_and_none_within() {
        let split = NetSplit::halves(&[1], &[2, 3]);
        let links = split.links(&THREE);
        assert_eq!(links.len(), 4);
        assert!(!links.contains(&link(2, 3)));
        assert_eq!(split.minority(&THREE), [1]);
        let five = [1, 2, 3, 4, 5];
        let split = NetSplit::halves(&[1, 2], &[3, 4, 5]);
        assert_eq!(split.links(&five).len(), 12);
        assert_eq!(split.minority(&five), [1, 2]);
    }

    #[test]
    fn a_bridge_cuts_only_its_ends_and_leaves_no_minority() {
        let split = NetSplit::bridge(1, 2, 3);
        let links: Vec<Link> = split.links(&THREE).into_iter().collect();
        assert_eq!(links, [link(1, 3), link(3, 1)]);
        assert!(split.minority(&THREE).is_empty());
    }

    #[test]
    fn an_asymmetric_split_cuts_one_direction() {
        let split = NetSplit::asymmetric(3, 1);
        let links: Vec<Link> = split.links(&THREE).into_iter().collect();
        assert_eq!(links, [link(3, 1)]);
        assert!(split.minority(&THREE).is_empty());
        let two = [1, 3];
        assert_eq!(split.minority(&two), [1, 3]);
    }

    #[test]
    fn links_to_unknown_nodes_or_to_oneself_are_left_out() {
        assert!(NetSplit::isolate(9).links(&THREE).is_empty());
        assert!(NetSplit::asymmetric(2, 2).links(&THREE).is_empty());
    }
}
