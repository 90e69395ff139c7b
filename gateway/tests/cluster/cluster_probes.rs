//! Synthetic probes in a cluster, on three in-process nodes started as `wharf serve` starts
//! them (real HTTP, real cluster port): the controller leader makes each node its own probe
//! topic, led by that node, and every node's `/readyz` shows successful rounds while no probe
//! topic shows in the API; a node whose probe is made to fail (its consumer paused by the
//! test hook) shows it in its own `/readyz`, the built-in `__wharf.probe` alert names it on
//! every node's `GET /v1/alerts`, a `probe` rule's webhook fires from the evaluating node,
//! and both resolve once the probe recovers; a node stopped is named as failing too.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use gateway::config::{AlertRaw, RawSettings};
use gateway::governance::probe::ProbeHooks;
use gateway::http::server::RunningServer;
use serde_json::{Value, json};

use crate::cluster_common::cluster_args;
use crate::support::free_port;
use crate::support::webhook_common::Receiver;

const NODES: u64 = 3;
/// The alerts' server secret, which signs the probe rule's events.
const SERVER_SECRET: &str = "server-secret-for-cluster-probes-01";
/// The probe interval of this test: rounds come every fraction of a second.
const TEST_PROBE_INTERVAL_MS: &str = "200";
/// The alert evaluation tick of this test.
const TEST_TICK_MS: &str = "100";
/// How long the test waits for a state or an event: generous, for three nodes in one
/// process on a loaded two-core machine (a failed round takes the probe's 5 s receive
/// timeout, and the keeper looks every 2 s).
const LIVENESS: Duration = Duration::from_secs(90);
/// The node whose probe the test makes fail.
const SICK: u64 = 2;

async fn start_cluster(dir: &std::path::Path, hooks: &[ProbeHooks]) -> Vec<RunningServer> {
    let cluster_ports: Vec<SocketAddr> = (0..NODES).map(|_| free_port()).collect();
    let starts = (1..=NODES).map(|id| {
        let raw = RawSettings {
            listen: Some("127.0.0.1:0".into()),
            data_dir: Some(dir.join(format!("node-{id}"))),
            probe_interval_ms: Some(TEST_PROBE_INTERVAL_MS.to_owned()),
            probe_hooks: Some(hooks[id as usize - 1].clone()),
            alerts: AlertRaw {
                webhook_hosts: None,
                secret: Some(SERVER_SECRET.to_owned()),
                tick_ms: Some(TEST_TICK_MS.to_owned()),
            },
            cluster: cluster_args(id, &cluster_ports),
            ..RawSettings::default()
        };
        let settings = raw.freeze().expect("valid settings");
        async move {
            RunningServer::start(settings)
                .await
                .expect("the node starts")
        }
    });
    join_all(starts).await
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()
        .expect("a client")
}

async fn get_json(http: &reqwest::Client, url: &str) -> (u16, Value) {
    match http.get(url).send().await {
        Ok(reply) => {
            let status = reply.status().as_u16();
            (status, reply.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

/// Every node's `/readyz` `probe`, once `check` accepts each (node id, probe).
async fn wait_probes(
    http: &reqwest::Client,
    nodes: &[RunningServer],
    what: &str,
    check: impl Fn(u64, &Value) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let mut probes = Vec::new();
        for node in nodes {
            let (_, ready) = get_json(http, &node.url("/readyz")).await;
            probes.push(ready["probe"].clone());
        }
        if (1..).zip(&probes).all(|(id, probe)| check(id, probe)) {
            return probes;
        }
        assert!(Instant::now() < deadline, "{what} not seen: {probes:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `GET /v1/alerts` on `node` once `check` accepts its list.
async fn wait_alerts(
    http: &reqwest::Client,
    node: &RunningServer,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + LIVENESS;
    loop {
        let (status, answer) = get_json(http, &node.url("/v1/alerts")).await;
        if status == 200 {
            let alerts = answer["alerts"].as_array().cloned().unwrap_or_default();
            if check(&alerts) {
                return alerts;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what} not seen: {status} {answer}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn builtin(alerts: &[Value]) -> Option<&Value> {
    alerts.iter().find(|a| a["rule"] == "__wharf.probe")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_probes_its_own_topic_and_a_failing_one_is_named_in_the_alerts() {
    let dir = tempfile::tempdir().expect("dir");
    let hooks: Vec<ProbeHooks> = (0..NODES).map(|_| ProbeHooks::default()).collect();
    let nodes = start_cluster(dir.path(), &hooks).await;
    let http = client();

    let healthy = wait_probes(&http, &nodes, "a successful round on every node", |_, p| {
        p["state"] == "ok" && p["last_latency_ms"].is_number()
    })
    .await;
    for probe in &healthy {
        assert_eq!(probe["consecutive_failures"], 0, "{probe}");
    }
    let latencies: Vec<Option<f64>> = healthy
        .iter()
        .map(|p| p["last_latency_ms"].as_f64())
        .collect();
    eprintln!("probe round trips per node (ms, debug build, ack=all): {latencies:?}");
    // The probe topics are the server's: no listing shows them.
    for node in &nodes {
        let (status, topics) = get_json(&http, &node.url("/v1/topics")).await;
        assert_eq!(status, 200, "{topics}");
        let names: Vec<&str> = topics["topics"]
            .as_array()
            .expect("topics")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with("__")), "{names:?}");
        let (status, _) = get_json(&http, &node.url("/v1/topics/__wharf.probe.1")).await;
        assert_eq!(status, 404);
    }

    let receiver = Receiver::start().await;
    let rule = json!({
        "name": "probe-down", "kind": "probe", "for_ms": 500, "webhook_url": receiver.url,
    });
    let deadline = Instant::now() + LIVENESS;
    loop {
        let reply = http
            .post(nodes[0].url("/v1/alerts/rules"))
            .json(&rule)
            .send()
            .await
            .expect("an answer");
        let status = reply.status().as_u16();
        if status == 201 {
            break;
        }
        // 503 while the controller settles; anything else is wrong.
        assert_eq!(status, 503, "{:?}", reply.text().await);
        assert!(Instant::now() < deadline, "the rule was never made");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    hooks[SICK as usize - 1].pause_consumer(true);
    let firing = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(firing["state"], "firing", "{firing}");
    assert_eq!(firing["rule"], "probe-down");
    assert!(firing["value"].as_f64().expect("value") >= 1.0, "{firing}");
    let probes = wait_probes(
        &http,
        &nodes,
        "node 2 failing, the others ok",
        |id, p| match id == SICK {
            true => p["state"] == "failing",
            false => p["state"] == "ok",
        },
    )
    .await;
    let error = probes[SICK as usize - 1]["last_error"]
        .as_str()
        .expect("an error");
    assert!(error.starts_with("receive:"), "{probes:?}");
    for node in &nodes {
        let alerts = wait_alerts(&http, node, "the built-in probe alert", |alerts| {
            builtin(alerts).is_some()
        })
        .await;
        let named = builtin(&alerts).expect("listed");
        assert_eq!(named["kind"], "probe", "{named}");
        assert_eq!(named["nodes"], json!([SICK]), "{named}");
        let rule = alerts
            .iter()
            .find(|a| a["rule"] == "probe-down")
            .unwrap_or_else(|| panic!("probe-down not listed: {alerts:?}"));
        assert_eq!(rule["nodes"], json!([SICK]), "{rule}");
    }

    hooks[SICK as usize - 1].pause_consumer(false);
    let resolved = receiver.next_verified(SERVER_SECRET, LIVENESS).await;
    assert_eq!(resolved["state"], "resolved", "{resolved}");
    assert_eq!(resolved["fired_at_ms"], firing["at_ms"]);
    wait_probes(&http, &nodes, "every node ok again", |_, p| {
        p["state"] == "ok"
    })
    .await;
    for node in &nodes {
        wait_alerts(&http, node, "no alert", |alerts| alerts.is_empty()).await;
    }

    // A node that stops answering cannot probe: the evaluating node (another, elected anew
    // if it was the stopped one) names it.
    let mut nodes = nodes;
    let gone = nodes.pop().expect("node 3");
    gone.stop().await.expect("stops cleanly");
    let alerts = wait_alerts(&http, &nodes[0], "the stopped node named", |alerts| {
        builtin(alerts).is_some_and(|b| b["nodes"] == json!([NODES]))
    })
    .await;
    let named = builtin(&alerts).expect("listed");
    assert!(named["value"].as_f64().expect("value") >= 1.0, "{named}");
    for node in nodes {
        node.stop().await.expect("stops cleanly");
    }
}
