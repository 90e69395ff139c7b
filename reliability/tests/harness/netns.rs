//! The namespace network of the cluster runner on its own (needs root; failing, not skipping,
//! where namespaces cannot be created): what it creates, the routes a split adds and a heal
//! removes, and that everything is gone once it is dropped.

use std::collections::BTreeSet;
use std::time::Duration;

use wharf_reliability::harness::command::run;
use wharf_reliability::harness::{Link, NetNamespaces, NetSplit};

const NODES: [u64; 3] = [1, 2, 3];

fn ip(args: &[&str]) -> String {
    run(NetNamespaces::ip_program(), args, Duration::from_secs(5)).expect("ip runs")
}

fn namespaces() -> String {
    ip(&["netns", "list"])
}

#[test]
fn a_split_adds_exactly_its_routes_a_heal_removes_them_and_dropping_removes_everything() {
    let mut network = NetNamespaces::create(&NODES).expect("namespaces (this needs root)");
    let listed = namespaces();
    for node in NODES {
        assert!(listed.contains(&network.namespace(node)), "{listed}");
    }
    let bridge_net = format!("{}/24", network.client_address());
    assert!(ip(&["-4", "addr", "show"]).contains(&bridge_net));
    let addrs = ip(&["-n", &network.namespace(2), "-4", "addr", "show"]);
    assert!(addrs.contains(&network.address(2).to_string()), "{addrs}");

    let links = NetSplit::isolate(2).links(&NODES);
    network.cut(&links).expect("cut");
    assert_eq!(network.blackholes().expect("routes"), links);
    let one_way: BTreeSet<Link> = NetSplit::asymmetric(1, 3).links(&NODES);
    network.cut(&one_way).expect("a second cut on top");
    assert_eq!(network.blackholes().expect("routes").len(), links.len() + 1);

    network.heal().expect("heal");
    assert!(network.blackholes().expect("routes").is_empty());

    let names: Vec<String> = NODES.iter().map(|n| network.namespace(*n)).collect();
    drop(network);
    let listed = namespaces();
    for name in names {
        assert!(!listed.contains(&name), "{name} left behind: {listed}");
    }
    assert!(
        !ip(&["-4", "addr", "show"]).contains(&bridge_net),
        "the bridge is left behind"
    );
}
