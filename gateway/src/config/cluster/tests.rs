//! Cluster settings: absent means a single node; present, each value and relation checked.

use super::*;

const SECRET: &str = "0123456789abcdef0123456789abcdef";

fn public() -> SocketAddr {
    "127.0.0.1:8080".parse().expect("addr")
}

fn three_nodes() -> ClusterArgs {
    ClusterArgs {
        node_id: Some("2".into()),
        zone: Some("b".into()),
        cluster_listen: Some("127.0.0.1:7002".into()),
        peers: Some("1=127.0.0.1:7001, 2=127.0.0.1:7002,3=127.0.0.1:7003".into()),
        cluster_secret: Some(SECRET.into()),
        cluster_secret_file: None,
        join: None,
        preferred_leader_after_ms: None,
    }
}

fn refused(args: ClusterArgs, setting: &str) {
    match freeze_cluster(args, public()) {
        Err(ConfigError::Invalid { setting: s, .. }) => assert_eq!(s, setting),
        other => panic!("expected {setting} refused, got {other:?}"),
    }
}

#[test]
fn no_cluster_setting_means_a_single_node() {
    assert_eq!(
        freeze_cluster(ClusterArgs::default(), public()).expect("valid"),
        None
    );
}

#[test]
fn three_voters_freeze_with_this_node_among_them() {
    let cluster = freeze_cluster(three_nodes(), public())
        .expect("valid")
        .expect("cluster");
    assert_eq!(cluster.node_id, 2);
    assert_eq!(cluster.zone, "b");
    assert_eq!(cluster.peers.len(), 3);
    assert_eq!(cluster.peers[&3].to_string(), "127.0.0.1:7003");
    assert!(
        !format!("{cluster:?}").contains(SECRET),
        "the secret is never printed"
    );
}

#[test]
fn every_cluster_setting_but_zone_is_required_once_one_is_given() {
    refused(
        ClusterArgs {
            node_id: None,
            ..three_nodes()
        },
        "node_id",
    );
    refused(
        ClusterArgs {
            cluster_listen: None,
            ..three_nodes()
        },
        "cluster_listen",
    );
    refused(
        ClusterArgs {
            peers: None,
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            cluster_secret: None,
            ..three_nodes()
        },
        "cluster_secret",
    );
    let zone_only = ClusterArgs {
        zone: Some("a".into()),
        ..ClusterArgs::default()
    };
    refused(zone_only, "node_id");
    let default_zone = freeze_cluster(
        ClusterArgs {
            zone: None,
            ..three_nodes()
        },
        public(),
    );
    assert_eq!(
        default_zone.expect("valid").expect("cluster").zone,
        DEFAULT_ZONE
    );
}

#[test]
fn bad_values_and_relations_are_refused_naming_the_setting() {
    refused(
        ClusterArgs {
            node_id: Some("0".into()),
            ..three_nodes()
        },
        "node_id",
    );
    refused(
        ClusterArgs {
            node_id: Some("x".into()),
            ..three_nodes()
        },
        "node_id",
    );
    refused(
        ClusterArgs {
            node_id: Some("4".into()),
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            zone: Some("a b".into()),
            ..three_nodes()
        },
        "zone",
    );
    refused(
        ClusterArgs {
            zone: Some("z".repeat(MAX_ZONE_LEN + 1)),
            ..three_nodes()
        },
        "zone",
    );
    assert!(
        freeze_cluster(
            ClusterArgs {
                zone: Some("z".repeat(MAX_ZONE_LEN)),
                ..three_nodes()
            },
            public()
        )
        .is_ok()
    );
    refused(
        ClusterArgs {
            cluster_listen: Some("127.0.0.1:8080".into()),
            ..three_nodes()
        },
        "cluster_listen",
    );
    refused(
        ClusterArgs {
            cluster_listen: Some("127.0.0.1:7009".into()),
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            peers: Some("2=127.0.0.1:7002,2=127.0.0.1:7003".into()),
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            peers: Some("1=127.0.0.1:7002,2=127.0.0.1:7002".into()),
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            peers: Some("2=127.0.0.1".into()),
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            peers: Some("2=0.0.0.0:7002".into()),
            ..three_nodes()
        },
        "peers",
    );
    let too_many: Vec<String> = (1..=MAX_PEERS as u64 + 1)
        .map(|i| format!("{i}=127.0.0.1:{}", 7000 + i))
        .collect();
    refused(
        ClusterArgs {
            peers: Some(too_many.join(",")),
            ..three_nodes()
        },
        "peers",
    );
    refused(
        ClusterArgs {
            cluster_secret: Some(SECRET[1..].into()),
            ..three_nodes()
        },
        "cluster_secret",
    );
    refused(
        ClusterArgs {
            cluster_secret_file: Some("/nonexistent".into()),
            ..three_nodes()
        },
        "cluster_secret_file",
    );
}

#[test]
fn the_cluster_port_may_listen_on_every_address_with_its_own_port() {
    let any = ClusterArgs {
        cluster_listen: Some("0.0.0.0:7002".into()),
        ..three_nodes()
    };
    assert!(freeze_cluster(any, public()).expect("valid").is_some());
}

#[test]
fn the_secret_can_come_from_a_file() {
    let file = crate::config::file::config_file(&format!("{SECRET}\n"));
    let args = ClusterArgs {
        cluster_secret: None,
        cluster_secret_file: Some(file.path().display().to_string()),
        ..three_nodes()
    };
    let cluster = freeze_cluster(args, public())
        .expect("valid")
        .expect("cluster");
    assert_eq!(cluster.secret.expose(), SECRET.as_bytes());
}

#[test]
fn a_joining_node_needs_a_running_node_to_reach_and_a_yes_or_no() {
    let frozen = |join: Option<&str>, peers: &str| {
        freeze_cluster(
            ClusterArgs {
                join: join.map(str::to_owned),
                peers: Some(peers.into()),
                ..three_nodes()
            },
            public(),
        )
    };
    let three = "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003";
    let joins = |join| frozen(join, three).expect("valid").expect("cluster").join;
    assert!(!joins(None));
    assert!(joins(Some("true")));
    assert!(!joins(Some("false")));
    refused(
        ClusterArgs {
            join: Some("yes please".into()),
            ..three_nodes()
        },
        "join",
    );
    assert!(matches!(
        frozen(Some("true"), "2=127.0.0.1:7002"),
        Err(ConfigError::Invalid { setting, .. }) if setting == "peers"
    ));
}

#[test]
fn preferred_leader_election_waits_ten_seconds_unless_set_and_zero_turns_it_off() {
    let settings = |value: Option<&str>| {
        let args = ClusterArgs {
            preferred_leader_after_ms: value.map(str::to_owned),
            ..three_nodes()
        };
        freeze_cluster(args, public())
            .expect("valid")
            .expect("cluster")
            .preferred_leader_after
    };
    assert_eq!(settings(None), Some(std::time::Duration::from_secs(10)));
    assert_eq!(
        settings(Some("2500")),
        Some(std::time::Duration::from_millis(2_500))
    );
    assert_eq!(settings(Some("0")), None);
    for bad in ["-1", "ten", "86400001"] {
        refused(
            ClusterArgs {
                preferred_leader_after_ms: Some(bad.into()),
                ..three_nodes()
            },
            "preferred_leader_after_ms",
        );
    }
}
