//! What the fault tests against real processes share: starting three nodes, asking a node for
//! a topic's leaders and end offsets, waiting for the replicas to agree, draining and checking,
//! and the assertion every fault test makes. `tests/faults/main.rs` includes it once as
//! `crate::cluster`; running one test at a time is `support/serial.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wharf_reliability::event::{NodeId, Partition};
use wharf_reliability::harness::{Cluster, ClusterSpec, wharf_binary};
use wharf_reliability::reader::read_file;
use wharf_reliability::workload::api::{Api, Reply};
use wharf_reliability::workload::{Recorder, Workload};
use wharf_reliability::{Report, Verdict, check};

/// Bound on every wait for the cluster to reach a state (a new leader, replicas agreeing).
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Bound on one status call to a node: a node that takes longer is paused or overloaded, and
/// the caller asks another or tries again.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// The seed of a randomized run: the environment variable `name`, else one drawn now; printed
/// either way, with how to repeat it.
pub fn seed_from_env(name: &str) -> u64 {
    let seed = std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("seed {seed} ({name}={seed} repeats it)");
    seed
}

/// An HTTP client (no proxy) whose every call ends within `timeout`.
pub fn http_client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// A positive whole number from the environment variable `name`, else `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => match text.trim().parse() {
            Ok(n) if n > 0 => n,
            _ => panic!("{name}={text:?}: expected a positive whole number"),
        },
        Err(_) => default,
    }
}

/// Three nodes in zones a, b and c, `adjust`ed first; `WHARF_FAULT_KEEP=1` keeps their folder.
pub fn three_nodes_with(adjust: impl FnOnce(&mut ClusterSpec)) -> Cluster {
    let mut spec = ClusterSpec::new(wharf_binary(), 3);
    spec.zones = vec!["a".into(), "b".into(), "c".into()];
    adjust(&mut spec);
    let mut cluster = Cluster::start(spec).expect("three nodes start");
    if std::env::var_os("WHARF_FAULT_KEEP").is_some() {
        eprintln!("keeping {}", cluster.root().display());
        cluster.keep_artifacts();
    }
    cluster
}

/// Topic `topic` as node `id` reports it, if it answers in time.
pub async fn topic_view(cluster: &Cluster, id: NodeId, topic: &str) -> Option<serde_json::Value> {
    let http = http_client(STATUS_TIMEOUT);
    let url = format!("{}/v1/topics/{topic}", cluster.url(id).ok()?);
    let reply = http.get(url).send().await.ok()?;
    if !reply.status().is_success() {
        return None;
    }
    reply.json().await.ok()
}

/// The leader of `partition` that a reply of [`topic_view`] names.
pub fn leader_in(view: &serde_json::Value, partition: Partition) -> Option<NodeId> {
    view["partition_stats"][partition as usize]["leader"]
        .as_str()
        .and_then(|l| l.parse().ok())
}

/// The end offset of `partition` that a reply of [`topic_view`] names.
pub fn end_offset_in(view: &serde_json::Value, partition: Partition) -> Option<u64> {
    view["partition_stats"][partition as usize]["end_offset"].as_u64()
}

/// The leader of `partition` as the first of the `alive` nodes that names one reports it.
pub async fn leader_of(
    cluster: &Cluster,
    topic: &str,
    partition: Partition,
    alive: &[NodeId],
) -> Option<NodeId> {
    for id in alive {
        let Some(view) = topic_view(cluster, *id, topic).await else {
            continue;
        };
        if let Some(leader) = leader_in(&view, partition) {
            return Some(leader);
        }
    }
    None
}

/// The leader of partition 0 of `topic` and its Raft term, in the highest term any of `nodes`
/// reports in `GET /v1/cluster` (each call bounded by 1 s), if one names it.
pub async fn leader_and_term(
    cluster: &Cluster,
    topic: &str,
    nodes: &[NodeId],
) -> Option<(NodeId, u64)> {
    let api = Api::new(Duration::from_secs(1)).expect("a client");
    let mut best: Option<(NodeId, u64)> = None;
    for &node in nodes {
        let url = cluster.url(node).expect("a node");
        let Reply::Ok(groups) = api.cluster_groups(&url).await else {
            continue;
        };
        let seen = groups
            .into_iter()
            .find(|g| g.topic == topic && g.partition == 0)
            .and_then(|g| Some((g.leader?, g.term?)));
        if let Some(seen) = seen
            && best.is_none_or(|(_, term)| seen.1 > term)
        {
            best = Some(seen);
        }
    }
    best
}

/// Waits (at most [`SETTLE_TIMEOUT`]) until a node other than `not` names itself the leader
/// of `partition`. Every node is asked on each poll: a follower that has not heard of the
/// election yet still names the old leader, and must not hide the one that won. The leader's
/// own word is taken, not a follower's, whose view may be older.
pub async fn new_leader(
    cluster: &Cluster,
    topic: &str,
    partition: Partition,
    not: NodeId,
) -> Option<NodeId> {
    let alive: Vec<NodeId> = cluster
        .node_ids()
        .into_iter()
        .filter(|n| *n != not)
        .collect();
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while Instant::now() < deadline {
        for id in &alive {
            if let Some(view) = topic_view(cluster, *id, topic).await
                && leader_in(&view, partition) == Some(*id)
            {
                return Some(*id);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Waits (at most [`SETTLE_TIMEOUT`]) until node `id` holds `partition` of `topic` up to the
/// end offset `leader` has now: a restarted replica that serves again, so the next fault
/// takes down one node of a cluster whose others are whole. `Err` says where each node
/// stood.
pub async fn wait_caught_up(
    cluster: &Cluster,
    topic: &str,
    partition: Partition,
    id: NodeId,
    leader: NodeId,
) -> Result<(), String> {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    let mut target = None;
    while Instant::now() < deadline {
        if target.is_none() {
            let view = topic_view(cluster, leader, topic).await;
            target = view.as_ref().and_then(|v| end_offset_in(v, partition));
        }
        if let Some(target) = target
            && let Some(view) = topic_view(cluster, id, topic).await
            && end_offset_in(&view, partition).is_some_and(|end| end >= target)
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!(
        "node {id} did not reach node {leader}'s end offset {target:?} of partition \
         {partition} within {SETTLE_TIMEOUT:?}\n{}",
        describe(cluster, topic, partition).await
    ))
}

/// Where each node stands on `partition` of `topic` (the leader it names, its end offset)
/// and the tail of its log: what a failed wait prints, so that a run that failed elsewhere
/// (CI) can be read without its data.
pub async fn describe(cluster: &Cluster, topic: &str, partition: Partition) -> String {
    let mut text = String::new();
    for id in cluster.node_ids() {
        let view = topic_view(cluster, id, topic).await;
        let leader = view.as_ref().and_then(|v| leader_in(v, partition));
        let end = view.as_ref().and_then(|v| end_offset_in(v, partition));
        let tail = cluster
            .log_tail(id, DESCRIBED_LOG_LINES)
            .unwrap_or_default();
        text.push_str(&format!(
            "--- node {id}: answers {}, names leader {leader:?}, end offset {end:?}; its log's tail:\n{tail}\n",
            view.is_some()
        ));
    }
    text
}

/// Lines of each node's log that [`describe`] prints: the last elections and errors,
/// without flooding a CI log.
const DESCRIBED_LOG_LINES: usize = 25;

/// Leader observations, recorded with a term of the harness's own: the API names a partition's
/// leader but not its Raft term, so the term goes up exactly when the observed leader differs
/// from the last one seen (a re-election of the same node is not counted as a change).
#[derive(Default)]
pub struct Leaders {
    last: BTreeMap<Partition, (NodeId, u64)>,
}

impl Leaders {
    /// Records that `node` leads `partition`.
    pub fn observe(&mut self, recorder: &Recorder, partition: Partition, node: NodeId) {
        let term = match self.last.get(&partition) {
            Some(&(last, term)) if last == node => term,
            Some(&(_, term)) => term + 1,
            None => 1,
        };
        self.last.insert(partition, (node, term));
        recorder.record_leader(partition, node, term);
    }

    /// Observes the leader of each of `partitions` partitions of `topic` as the first of
    /// `alive` that names one reports it; returns them (a partition without a leader right now
    /// is left out).
    pub async fn observe_all(
        &mut self,
        cluster: &Cluster,
        recorder: &Recorder,
        (topic, partitions): (&str, u32),
        alive: &[NodeId],
    ) -> BTreeMap<Partition, NodeId> {
        let mut leaders = BTreeMap::new();
        for partition in 0..partitions {
            if let Some(leader) = leader_of(cluster, topic, partition, alive).await {
                self.observe(recorder, partition, leader);
                leaders.insert(partition, leader);
            }
        }
        leaders
    }
}

/// Each node's end offset per partition, or `None` while a node does not answer.
pub async fn end_offsets(cluster: &Cluster, topic: &str, partitions: u32) -> Option<Vec<Vec<u64>>> {
    let mut all = Vec::new();
    for id in cluster.node_ids() {
        let view = topic_view(cluster, id, topic).await?;
        let ends = (0..partitions)
            .map(|p| end_offset_in(&view, p))
            .collect::<Option<Vec<u64>>>()?;
        all.push(ends);
    }
    Some(all)
}

/// Heals: after the producers stopped, waits (at most `timeout`) until every node reports the
/// same end offset for every partition, so a follower is drained once it applied what its
/// leader committed rather than while the commit is still on its way. Returns whether they
/// agreed; not reaching it is printed, and a caller may drain anyway: per-node loss then shows
/// what the node lacks.
pub async fn wait_replicas_agree(
    cluster: &Cluster,
    (topic, partitions): (&str, u32),
    timeout: Duration,
) -> bool {
    let since = Instant::now();
    let mut last = None;
    while since.elapsed() < timeout {
        last = end_offsets(cluster, topic, partitions).await;
        if let Some(ends) = &last
            && ends.windows(2).all(|w| w[0] == w[1])
        {
            eprintln!(
                "replicas agree after {:?}: end offsets {:?}",
                since.elapsed(),
                ends[0]
            );
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eprintln!("replicas still disagree after {timeout:?}: end offsets {last:?}");
    false
}

/// Waits for the replicas to agree (at most [`SETTLE_TIMEOUT`]), drains every node, checks the
/// history and returns the report (printed; recorded as the test's report line unless
/// `record` is false, for a test that records a line of its own).
pub async fn drain_and_check(
    cluster: &Cluster,
    workload: &Workload,
    watched: (&str, u32),
    record: bool,
) -> Report {
    wait_replicas_agree(cluster, watched, SETTLE_TIMEOUT).await;
    workload.drain().await.expect("drain");
    let path = workload.recorder().finish().expect("history written");
    let report = check(&read_file(&path).expect("history reads back"));
    eprintln!("{}", report.line());
    if record {
        wharf_reliability::case::record_line(&report.line());
    }
    report
}

/// What every fault test asserts: nothing acknowledged lost anywhere, not even on one node;
/// every acknowledged message delivered, none delivered by a receive sent after its ack was
/// confirmed. Redeliveries are allowed (at-least-once) and only reported.
pub fn assert_nothing_acknowledged_lost(report: &Report) {
    let findings = &report.findings;
    let queue = &findings.queue;
    assert_eq!(queue.lost.count, 0, "{:?}", report.reasons);
    assert_eq!(queue.per_node_lost.count, 0, "{:?}", report.reasons);
    assert_eq!(
        findings.consumption.undelivered.count, 0,
        "acknowledged, never delivered: {:?}",
        findings.consumption.undelivered.first
    );
    assert_eq!(
        findings.delivered_after_ack.late.count, 0,
        "delivered after a confirmed ack: {:?}",
        findings.delivered_after_ack.late.first
    );
    assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
    let consumption = &findings.consumption;
    eprintln!(
        "deliveries {} of {} values, redelivered {} ({:.2}%); delivered after ack with the \
         receive in flight: {} {:?}",
        consumption.deliveries,
        consumption.distinct,
        consumption.redelivered,
        consumption.redelivered_rate * 100.0,
        findings.delivered_after_ack.in_flight.count,
        findings.delivered_after_ack.in_flight.first
    );
}

/// The newest segment file (`{base:020}.log`, highest base) of `partition` of `topic` in a
/// node's data folder (`topics/{topic}-{uid}/{partition}/`).
pub fn newest_segment(data_dir: &Path, topic: &str, partition: Partition) -> Option<PathBuf> {
    let topics = std::fs::read_dir(data_dir.join("topics")).ok()?;
    let prefix = format!("{topic}-");
    let topic_dir = topics.filter_map(Result::ok).map(|e| e.path()).find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&prefix))
    })?;
    let partition_dir = topic_dir.join(partition.to_string());
    std::fs::read_dir(partition_dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.len() == 24 && n.ends_with(".log"))
        })
        .max()
}

/// Cuts a stopped node's segment file in the middle of its frames (a segment may end in
/// zeros written ahead of its last frame, which are not frames): keeps the first half of the
/// bytes up to its last non-zero byte, one more when that half ends on a frame's end (a log
/// cut there is whole, a shorter log recovery cannot see). Returns (bytes of frames before,
/// length after).
pub fn truncate_mid_log(segment: &Path) -> std::io::Result<(u64, u64)> {
    let bytes = std::fs::read(segment)?;
    let frames = bytes
        .iter()
        .rposition(|b| *b != 0)
        .map_or(0, |last| last + 1);
    let half = frames / 2;
    let on_a_boundary =
        frame_around(&bytes[..frames], half).is_some_and(|(start, _)| start == half);
    let keep = (half + usize::from(on_a_boundary)) as u64;
    let file = std::fs::OpenOptions::new().write(true).open(segment)?;
    file.set_len(keep)?;
    file.sync_all()?;
    Ok((frames as u64, keep))
}

/// Bytes before a frame's body: its body length and CRC (`storage::codec::PREFIX_LEN`).
const FRAME_PREFIX_LEN: usize = 8;

/// Flips every bit of one byte a quarter into a stopped node's segment file's frames (see
/// [`truncate_mid_log`]), in a frame's body: a record's bytes, which the frame's CRC covers.
/// Not in a length prefix: recovery steps over a bad frame by the length its prefix claims to
/// tell damage (intact frames beyond) from a torn write, so a flipped length reads as a torn
/// tail (a CI run flipped byte 1 of a frame and the node cut its log without a claim).
/// Returns (bytes of frames, the position flipped).
pub fn flip_byte_in_log(segment: &Path) -> std::io::Result<(u64, u64)> {
    use std::io::{Seek, SeekFrom, Write};
    let bytes = std::fs::read(segment)?;
    let frames = bytes
        .iter()
        .rposition(|b| *b != 0)
        .map_or(0, |last| last + 1);
    let at = body_byte_at_or_after(&bytes[..frames], frames / 4);
    let Some(byte) = bytes.get(at) else {
        return Ok((frames as u64, frames as u64));
    };
    let mut file = std::fs::OpenOptions::new().write(true).open(segment)?;
    file.seek(SeekFrom::Start(at as u64))?;
    file.write_all(&[!byte])?;
    file.sync_all()?;
    Ok((frames as u64, at as u64))
}

/// `at`, or the first body byte of the frame whose prefix holds `at`.
fn body_byte_at_or_after(frames: &[u8], at: usize) -> usize {
    match frame_around(frames, at) {
        Some((start, _)) => at.max(start + FRAME_PREFIX_LEN),
        None => at,
    }
}

/// Where the frame holding byte `at` of `frames` starts and ends, walking the frames from the
/// start by their length prefixes.
fn frame_around(frames: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut start = 0;
    while let Some(prefix) = frames.get(start..start + FRAME_PREFIX_LEN) {
        let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        let next = start + FRAME_PREFIX_LEN + len;
        if at < next {
            return Some((start, next));
        }
        start = next;
    }
    None
}

/// Producers only (`ack=all`, unique values, to the nodes in turn) on `topic` of `partitions`
/// partitions, at `rate` messages/s for `seconds`: the election and soak cases judge the
/// drained logs, not consumption.
pub fn producers_only(
    (topic, partitions): (&str, u32),
    rate: u32,
    seconds: u64,
) -> wharf_reliability::workload::WorkloadSpec {
    let mut spec =
        wharf_reliability::workload::WorkloadSpec::new(rate, Duration::from_secs(seconds));
    spec.topic = topic.into();
    spec.partitions = partitions;
    spec.consumers = 0;
    spec.seed = 11;
    spec
}

/// The `run` header of a history over every node of `cluster`, with no subscription to
/// consume through.
pub fn run_header(
    (id, name): (&str, &str),
    seed: u64,
    faults: &[&str],
    (partitions, leader_change): (u32, bool),
    cluster: &Cluster,
) -> wharf_reliability::event::Run {
    wharf_reliability::event::Run {
        id: id.into(),
        name: name.into(),
        seed,
        faults: faults.iter().map(|f| (*f).to_owned()).collect(),
        require_leader_change: leader_change,
        partitions,
        nodes: cluster.node_ids(),
        consumed_through: vec![],
        replicas: Default::default(),
        exactly_once_ids: false,
        idle_delivery_bound_ms: None,
    }
}

/// Starts `spec`'s workload on `cluster` under the history header `run` (created in the
/// cluster's folder) and waits until `warm` writes are acknowledged (at most [`SETTLE_TIMEOUT`]).
pub async fn start_workload(
    cluster: &Cluster,
    spec: wharf_reliability::workload::WorkloadSpec,
    run: wharf_reliability::event::Run,
    warm: u64,
) -> (Workload, wharf_reliability::workload::RunningWorkload) {
    let recorder = Recorder::create(&cluster.root().join("history.jsonl"), run).expect("history");
    let workload = Workload::new(spec, cluster.endpoints(), recorder).expect("workload");
    workload.setup().await.expect("topic");
    let running = workload.start();
    let warmed_up = running.wait_acked(warm, SETTLE_TIMEOUT).await;
    assert!(
        warmed_up,
        "{warm} writes not acknowledged before the fault: {:?}",
        running.stats()
    );
    (workload, running)
}

/// What one produce call came back with, header by header as the forwarding and soak cases
/// judge it.
#[derive(Debug, Clone, Default)]
pub struct Produced {
    /// The HTTP status, if an answer came.
    pub status: Option<u16>,
    /// The problem `code` of a refusal.
    pub code: Option<String>,
    /// Whether a `Retry-After` header came with it.
    pub retry_after: bool,
    /// (partition, offset) the reply named.
    pub placement: Option<(Partition, Option<u64>)>,
    /// No answer within the client's timeout.
    pub timed_out: bool,
    /// The connection could not be opened (nothing was sent).
    pub refused: bool,
}

impl Produced {
    /// What it proves about the write, as the workload's producers judge it: `ok` for a 2xx
    /// naming its place; `fail` when never sent, or refused with a 4xx or a 503 other than
    /// `replication_timeout`; `info` otherwise.
    pub fn outcome(&self) -> wharf_reliability::event::Outcome {
        use wharf_reliability::event::Outcome;
        match self.status {
            Some(s) if (200..300).contains(&s) && self.placement.is_some() => Outcome::Ok,
            None if self.refused => Outcome::Fail,
            Some(503) if self.code.as_deref() == Some("replication_timeout") => Outcome::Info,
            Some(s) if (400..500).contains(&s) || s == 503 => Outcome::Fail,
            _ => Outcome::Info,
        }
    }
}

/// `POST {url}/v1/topics/{topic}/messages?ack=all` of one message whose `id` is its value, on
/// `http` (whose timeout bounds it).
pub async fn produce_one(
    http: &reqwest::Client,
    url: &str,
    topic: &str,
    (value, key): (&str, &str),
) -> Produced {
    let body = serde_json::json!({ "messages": [{ "value": value, "key": key, "id": value }] });
    let sent = http
        .post(format!("{url}/v1/topics/{topic}/messages"))
        .query(&[("ack", "all")])
        .json(&body)
        .send()
        .await;
    let response = match sent {
        Ok(response) => response,
        Err(error) => {
            return Produced {
                timed_out: error.is_timeout(),
                refused: error.is_connect(),
                ..Produced::default()
            };
        }
    };
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .contains_key(reqwest::header::RETRY_AFTER);
    let body: Option<serde_json::Value> = match response.bytes().await {
        Ok(bytes) => serde_json::from_slice(&bytes).ok(),
        Err(error) => {
            return Produced {
                status: Some(status),
                retry_after,
                timed_out: error.is_timeout(),
                ..Produced::default()
            };
        }
    };
    let body = body.unwrap_or_default();
    let placement = body["messages"][0]["partition"]
        .as_u64()
        .map(|p| (p as Partition, body["messages"][0]["offset"].as_u64()));
    Produced {
        status: Some(status),
        code: body["code"].as_str().map(str::to_owned),
        retry_after,
        placement,
        timed_out: false,
        refused: false,
    }
}

/// Records `produced` (a write of `value` sent by `process` to `node` at `invoke_ms`) as a
/// `produce` event of the history, so the checker knows the value.
pub fn record_produce(
    recorder: &Recorder,
    (process, node): (u32, NodeId),
    (value, key): (&str, &str),
    invoke_ms: u64,
    produced: &Produced,
) {
    use wharf_reliability::event::{Event, Produce};
    recorder.record(&Event::Produce(Produce {
        process,
        value: value.to_owned(),
        key: Some(key.to_owned()),
        partition: produced.placement.map(|(p, _)| p),
        offset: produced.placement.and_then(|(_, o)| o),
        node,
        invoke_ms,
        complete_ms: recorder.now_ms(),
        outcome: produced.outcome(),
        status: produced.status,
        code: None,
        duplicate: false,
    }));
}

/// The value at `offset` of `partition` as node `url` serves it, if it does.
pub async fn read_value(
    http: &reqwest::Client,
    url: &str,
    topic: &str,
    (partition, offset): (Partition, u64),
) -> Option<String> {
    let reply = http
        .get(format!(
            "{url}/v1/topics/{topic}/partitions/{partition}/messages"
        ))
        .query(&[("offset", offset), ("max", 1)])
        .send()
        .await
        .ok()?;
    if !reply.status().is_success() {
        return None;
    }
    let page: serde_json::Value = reply.json().await.ok()?;
    let record = &page["messages"][0];
    (record["offset"].as_u64() == Some(offset))
        .then(|| record["value"].as_str().map(str::to_owned))
        .flatten()
}
