//! Forwarding against a real three-process cluster (the `wharf` binary): a node that does not
//! lead a partition sends the request on to the leader the cluster metadata names, once.
//!
//! - R12, forwarding under churn: clients talk only to node 1 while partition leaders move
//!   (admin leader moves) and die (kill -9 of a leader on another node): every request is
//!   answered within the server's forward timeout (plus a margin), none comes back as a forward
//!   loop, every 503 carries `Retry-After`, and nothing acknowledged is lost.
//! - G10, forwarding SSRF: requests to a follower whose `Host`, `X-Forwarded-Host`,
//!   `Forwarded` or absolute-form request target name a listener of the test's own (the trap)
//!   are served through the real leader or refused with a 4xx; the trap gets no connection, so
//!   the client's `Authorization` never reaches it.
//!
//! `WHARF_FAULT_SECONDS` lengthens R12's churn (default 15 s); `WHARF_FAULT_SEED` repeats its
//! choices. `WHARF_FAULT_KEEP=1` keeps every run's folder (history and node logs).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wharf_reliability::case::CaseLine;
use wharf_reliability::event::{NodeId, Outcome, Phase};
use wharf_reliability::harness::Cluster;
use wharf_reliability::workload::{Recorder, Workload};

use crate::cluster::{
    Leaders, assert_nothing_acknowledged_lost, drain_and_check, env_number, http_client, leader_of,
    produce_one, producers_only, read_value, record_produce, run_header, seed_from_env,
    three_nodes_with,
};
use crate::serial::serially;

/// The server's bound on a forwarded request (`gateway::fanout::forward::FORWARD_TIMEOUT`, 75 s: a
/// receive long-polls up to 60 s, plus margin); a produce is answered sooner or it hangs.
const SERVER_FORWARD_TIMEOUT: Duration = Duration::from_secs(75);
/// The client's bound: the server's forward timeout and a margin for this loaded machine.
/// A request not answered by then hangs past the timeout.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(80);
/// The status a forward loop would come back with (RFC 5842 Loop Detected).
const LOOP_DETECTED: u16 = 508;

const CHURN_TOPIC: &str = "churn";
/// Three partitions: node 1 leads some and forwards the others, and the churn moves them.
const CHURN_PARTITIONS: u32 = 3;
const CHURN_WATCHED: (&str, u32) = (CHURN_TOPIC, CHURN_PARTITIONS);
/// Client tasks, each sending one produce at a time to node 1.
const CLIENTS: u32 = 4;
/// Pause between two produces of one client: about 150 requests/s in all when answers are quick.
const CLIENT_PAUSE: Duration = Duration::from_millis(25);
/// Keys the clients spread their writes over, so every partition gets some.
const KEYS: u64 = 12;
/// How long a killed leader stays down before its restart.
const DOWN: Duration = Duration::from_millis(1_500);
/// Pause between two churn steps.
const CHURN_PAUSE: Duration = Duration::from_millis(1_000);

/// What node 1's clients saw.
#[derive(Debug, Default)]
struct Seen {
    requests: AtomicU64,
    acked: AtomicU64,
    hanging: AtomicU64,
    loops: AtomicU64,
    unavailable: AtomicU64,
    unavailable_without_retry_after: AtomicU64,
    slowest_ms: AtomicU64,
}

/// Client `process`: produces to node 1 until `until`, one request at a time.
async fn client(process: u32, url: String, recorder: Recorder, seen: Arc<Seen>, until: Instant) {
    let http = http_client(CLIENT_TIMEOUT);
    let mut counter = 0_u64;
    while Instant::now() < until {
        let value = format!("p{process}-{counter}");
        let key = format!("k{}", (counter * 7 + u64::from(process)) % KEYS);
        counter += 1;
        let invoke_ms = recorder.now_ms();
        let since = Instant::now();
        let produced = produce_one(&http, &url, CHURN_TOPIC, (&value, &key)).await;
        let took = since.elapsed();
        record_produce(
            &recorder,
            (process, 1),
            (&value, &key),
            invoke_ms,
            &produced,
        );
        let bump = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
        bump(&seen.requests);
        seen.slowest_ms
            .fetch_max(took.as_millis() as u64, Ordering::Relaxed);
        if produced.outcome() == Outcome::Ok {
            bump(&seen.acked);
        }
        if produced.timed_out || took > SERVER_FORWARD_TIMEOUT {
            bump(&seen.hanging);
        }
        let looped = produced.status == Some(LOOP_DETECTED)
            || produced.code.as_deref().is_some_and(|c| c.contains("loop"));
        if looped {
            bump(&seen.loops);
        }
        if produced.status == Some(503) {
            bump(&seen.unavailable);
            if !produced.retry_after {
                bump(&seen.unavailable_without_retry_after);
                eprintln!("503 without Retry-After: {produced:?}");
            }
        }
        tokio::time::sleep(CLIENT_PAUSE).await;
    }
}

/// `POST /v1/cluster/partitions/{topic}/{partition}/leader` on node `via`: moves the
/// partition's leadership to `to`; returns the status, if one came.
async fn move_leader(
    cluster: &Cluster,
    via: NodeId,
    (partition, to): (u32, NodeId),
) -> Option<u16> {
    let http = http_client(Duration::from_secs(15));
    let url = format!(
        "{}/v1/cluster/partitions/{CHURN_TOPIC}/{partition}/leader",
        cluster.url(via).ok()?
    );
    let reply = http
        .post(url)
        .json(&serde_json::json!({ "node": to }))
        .send()
        .await
        .ok()?;
    Some(reply.status().as_u16())
}

#[test]
fn requests_to_one_node_are_answered_in_time_while_leaders_move_and_die() {
    serially(async {
        let mut cluster = three_nodes_with(|_| {});
        let seed = seed_from_env("WHARF_FAULT_SEED");
        let mut rng = StdRng::seed_from_u64(seed);
        // Leader changes are required of every partition: the churn visits each in turn.
        let churn = Duration::from_secs(env_number("WHARF_FAULT_SECONDS", 15));
        let run = run_header(
            ("R12", "forwarding-under-churn"),
            seed,
            &["move_leader", "kill_leader"],
            (CHURN_PARTITIONS, true),
            &cluster,
        );
        let recorder =
            Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
        // The workload only creates the topic and drains: node 1's clients write themselves.
        let spec = producers_only(CHURN_WATCHED, 1, churn.as_secs());
        let workload =
            Workload::new(spec, cluster.endpoints(), recorder.clone()).expect("workload");
        workload.setup().await.expect("topic");
        let all = cluster.node_ids();
        let mut leaders = Leaders::default();
        leaders
            .observe_all(&cluster, &recorder, CHURN_WATCHED, &all)
            .await;

        let seen = Arc::new(Seen::default());
        let until = Instant::now() + churn;
        let url = cluster.url(1).expect("node 1");
        let clients: Vec<_> = (0..CLIENTS)
            .map(|process| {
                tokio::spawn(client(
                    process,
                    url.clone(),
                    recorder.clone(),
                    seen.clone(),
                    until,
                ))
            })
            .collect();

        let (mut moves, mut kills, mut moves_refused) = (0_u64, 0_u64, 0_u64);
        // The partitions in turn, so each changes leader; what happens to it is drawn.
        for partition in (0..CHURN_PARTITIONS).cycle() {
            if Instant::now() + DOWN + CHURN_PAUSE >= until {
                break;
            }
            tokio::time::sleep(CHURN_PAUSE).await;
            let Some(leader) = leader_of(&cluster, CHURN_TOPIC, partition, &all).await else {
                continue;
            };
            // Node 1 serves the clients, so it is moved away from but never killed. The run
            // declares both faults, so a run that drew only moves so far kills the next
            // leader it can (a fresh run drew 11 moves and no kill, and its history was
            // judged incomplete).
            let overdue = kills == 0 && moves >= 3;
            if leader != 1 && (overdue || rng.gen_bool(0.5)) {
                let killed = tokio::task::block_in_place(|| cluster.kill9(leader));
                recorder.record_fault("kill_leader", Some(leader), Phase::Start, killed.is_ok());
                killed.expect("kill -9 of a leader");
                kills += 1;
                tokio::time::sleep(DOWN).await;
                let others: Vec<NodeId> = all.iter().copied().filter(|n| *n != leader).collect();
                leaders
                    .observe_all(&cluster, &recorder, CHURN_WATCHED, &others)
                    .await;
                tokio::task::block_in_place(|| cluster.restart(leader)).expect("restarts");
                recorder.record_fault("kill_leader", Some(leader), Phase::End, true);
            } else {
                let others: Vec<NodeId> = all.iter().copied().filter(|n| *n != leader).collect();
                let to = others[rng.gen_range(0..others.len())];
                let via = all[rng.gen_range(0..all.len())];
                recorder.record_fault("move_leader", Some(to), Phase::Start, true);
                let status = move_leader(&cluster, via, (partition, to)).await;
                recorder.record_fault("move_leader", Some(to), Phase::End, true);
                moves += 1;
                if status != Some(200) {
                    moves_refused += 1;
                    eprintln!("move of partition {partition} to node {to} via {via}: {status:?}");
                }
            }
            leaders
                .observe_all(&cluster, &recorder, CHURN_WATCHED, &all)
                .await;
        }
        for client in clients {
            client.await.expect("a client ran");
        }
        let report = drain_and_check(&cluster, &workload, CHURN_WATCHED, false).await;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let requests = get(&seen.requests);
        let queue = &report.findings.queue;
        CaseLine::new("R12", "forwarding-under-churn")
            .seed(seed)
            .figure("requests", requests)
            .must_be_zero("hanging past timeout", get(&seen.hanging), requests)
            .must_be_zero("forward loops", get(&seen.loops), requests)
            .must_be_zero(
                "503 without Retry-After",
                get(&seen.unavailable_without_retry_after),
                get(&seen.unavailable),
            )
            .must_be_zero("acked lost", queue.lost.count, queue.acknowledged)
            .figure("leader moves", format!("{moves} ({moves_refused} refused)"))
            .figure("leader kills", kills)
            .figure("leader changes", report.findings.leadership.total_changes())
            .figure("slowest answer", format!("{} ms", get(&seen.slowest_ms)))
            .verdict(report.verdict)
            .record();
        assert_eq!(
            get(&seen.hanging),
            0,
            "requests hung past the forward timeout"
        );
        assert_eq!(get(&seen.loops), 0, "requests came back as forward loops");
        assert_eq!(
            get(&seen.unavailable_without_retry_after),
            0,
            "503 answers without Retry-After"
        );
        assert!(
            moves + kills >= 3,
            "too little churn to judge: {moves} moves, {kills} kills"
        );
        assert!(
            get(&seen.acked) >= 100,
            "too few writes acknowledged to judge: {seen:?}"
        );
        assert_nothing_acknowledged_lost(&report);
    });
}

const SSRF_TOPIC: &str = "ssrf";
/// The token every G10 request carries: it must never reach the trap.
const TOKEN: &str = "Bearer g10-secret-token-never-leaves-the-cluster";
/// Bound on one raw request to a node, connect to the end of its answer.
const RAW_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the trap keeps listening after the last request, for a late connection.
const TRAP_GRACE: Duration = Duration::from_secs(1);

/// What the trap saw: connections, and whether any carried the token.
#[derive(Debug, Default)]
struct Trap {
    connections: AtomicU64,
    tokens: AtomicU64,
}

/// Accepts connections on `listener` until dropped, counting them and any that sends the token.
async fn trap(listener: tokio::net::TcpListener, seen: Arc<Trap>) {
    while let Ok((mut socket, from)) = listener.accept().await {
        seen.connections.fetch_add(1, Ordering::Relaxed);
        eprintln!("the trap got a connection from {from}");
        let seen = seen.clone();
        tokio::spawn(async move {
            let mut bytes = vec![0; 64 * 1024];
            let read = tokio::time::timeout(Duration::from_secs(2), socket.read(&mut bytes)).await;
            if let Ok(Ok(n)) = read
                && String::from_utf8_lossy(&bytes[..n]).contains("g10-secret-token")
            {
                seen.tokens.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

/// Sends `head` (request line and headers, without the blank line) and `body` to `addr` over
/// one connection and returns the answer's status code (`None`: no answer in time).
async fn raw_request(addr: &str, head: &str, body: &str) -> Option<u16> {
    let exchange = async {
        let mut socket = tokio::net::TcpStream::connect(addr).await.ok()?;
        let request = format!(
            "{head}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nAuthorization: \
             {TOKEN}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        socket.read_to_end(&mut answer).await.ok()?;
        let text = String::from_utf8_lossy(&answer);
        text.split_whitespace().nth(1)?.parse().ok()
    };
    tokio::time::timeout(RAW_TIMEOUT, exchange)
        .await
        .ok()
        .flatten()
}

/// The request heads of G10, each naming the trap at `trap` in another way; `node` is the
/// follower's own address, `value` the message's value.
fn spoofed_heads(trap: &str, node: &str) -> Vec<(&'static str, String)> {
    let path = format!("/v1/topics/{SSRF_TOPIC}/messages?ack=all");
    vec![
        // The control: a plain request the follower must forward to the leader.
        ("plain", format!("POST {path} HTTP/1.1\r\nHost: {node}")),
        ("host", format!("POST {path} HTTP/1.1\r\nHost: {trap}")),
        (
            "x-forwarded-host",
            format!(
                "POST {path} HTTP/1.1\r\nHost: {node}\r\nX-Forwarded-Host: {trap}\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Port: {}",
                trap.rsplit(':').next().unwrap_or("0")
            ),
        ),
        (
            "forwarded",
            format!(
                "POST {path} HTTP/1.1\r\nHost: {node}\r\nForwarded: for=127.0.0.1;host={trap};proto=http"
            ),
        ),
        (
            "absolute-form",
            format!("POST http://{trap}{path} HTTP/1.1\r\nHost: {trap}"),
        ),
        (
            "absolute-form, own host",
            format!("POST http://{trap}{path} HTTP/1.1\r\nHost: {node}"),
        ),
        (
            "all at once",
            format!(
                "POST http://{trap}{path} HTTP/1.1\r\nHost: {trap}\r\nX-Forwarded-Host: {trap}\r\nForwarded: host={trap}\r\nX-Forwarded-For: {trap}"
            ),
        ),
    ]
}

#[test]
fn a_follower_forwards_only_to_the_leader_the_metadata_names_whatever_the_request_says() {
    serially(async {
        let cluster = three_nodes_with(|_| {});
        let run = run_header(("G10", "forwarding-ssrf"), 11, &[], (1, false), &cluster);
        let recorder =
            Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
        let workload = Workload::new(
            producers_only((SSRF_TOPIC, 1), 1, 1),
            cluster.endpoints(),
            recorder,
        )
        .expect("workload");
        workload.setup().await.expect("topic");
        let all = cluster.node_ids();
        let leader = leader_of(&cluster, SSRF_TOPIC, 0, &all)
            .await
            .expect("the partition has a leader");
        let follower = *all.iter().find(|n| **n != leader).expect("a follower");
        let node = cluster
            .url(follower)
            .expect("the follower")
            .trim_start_matches("http://")
            .to_owned();

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a trap");
        let trap_addr = listener.local_addr().expect("its address").to_string();
        let seen = Arc::new(Trap::default());
        let trap_task = tokio::spawn(trap(listener, seen.clone()));

        let heads = spoofed_heads(&trap_addr, &node);
        let mut served = Vec::new();
        let mut wrong_answers = Vec::new();
        for (i, (name, head)) in heads.iter().enumerate() {
            let value = format!("g10-{i}");
            let body = format!(r#"{{"messages":[{{"value":"{value}","id":"{value}"}}]}}"#);
            let status = raw_request(&node, head, &body).await;
            eprintln!("{name}: {status:?}");
            match status {
                Some(200..=299) => served.push(value),
                Some(400..=499) => {}
                other => wrong_answers.push((*name, other)),
            }
        }
        tokio::time::sleep(TRAP_GRACE).await;
        let requests = heads.len() as u64;
        let connections = seen.connections.load(Ordering::Relaxed);
        let tokens = seen.tokens.load(Ordering::Relaxed);
        // The trap itself works: a request sent to it straight is counted, token and all.
        let _ = raw_request(&trap_addr, &heads[0].1, "{}").await;
        tokio::time::sleep(TRAP_GRACE).await;
        let trap_works = seen.connections.load(Ordering::Relaxed) == connections + 1
            && seen.tokens.load(Ordering::Relaxed) == tokens + 1;
        trap_task.abort();

        // What was served went to the real leader: the leader's log holds it.
        let http = http_client(Duration::from_secs(5));
        let leader_url = cluster.url(leader).expect("the leader");
        let mut on_leader = Vec::new();
        for offset in 0..heads.len() as u64 {
            if let Some(value) = read_value(&http, &leader_url, SSRF_TOPIC, (0, offset)).await {
                on_leader.push(value);
            }
        }
        let missing: Vec<&String> = served.iter().filter(|v| !on_leader.contains(v)).collect();

        CaseLine::new("G10", "forwarding-ssrf")
            .must_be_zero("requests forwarded to a non-member", connections, requests)
            .must_be_zero("Authorization sent to a non-member", tokens, requests)
            .must_be_zero(
                "answers other than 2xx or 4xx",
                wrong_answers.len() as u64,
                requests,
            )
            .figure(
                "served through the leader",
                format!("{} of {requests}", served.len()),
            )
            .must_be_zero(
                "served yet not on the leader",
                missing.len() as u64,
                served.len() as u64,
            )
            .record();
        assert!(
            trap_works,
            "the trap did not see a request sent to it: {seen:?}"
        );
        assert_eq!(connections, 0, "the trap got connections");
        assert_eq!(tokens, 0, "the token reached the trap");
        assert!(
            wrong_answers.is_empty(),
            "answers other than 2xx/4xx: {wrong_answers:?}"
        );
        assert!(
            missing.is_empty(),
            "served, yet not on the leader: {missing:?}"
        );
        assert!(
            served.contains(&"g10-0".to_owned()),
            "the plain request was not forwarded: nothing shows forwarding works"
        );
    });
}
