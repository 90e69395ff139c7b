//! Memory stays bounded under load (the QMQ lesson in `shared/seeds/`), with the real `wharf`
//! binary so that its resident set is its own:
//! - 1,000 producers of 139 KB JSON batches (100 × 1 KiB base64) at once, for a bounded time,
//!   against a small memory budget: peak RSS within what the budget and the connections
//!   imply, every refusal a 503 with `Retry-After`, no connection reset, every acked message
//!   readable afterwards;
//! - 50 consumers that send a receive for 1 MB messages and never read the answer: peak RSS
//!   within the budget's bound, the memory returned once their write timeout has passed,
//!   and their messages delivered to a reading consumer afterwards.
//!
//! Figures are printed (`--nocapture`); nothing here asserts a rate or a duration.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use wharf_reliability::CaseLine;

use crate::support::child::Server;

const MIB: u64 = 1024 * 1024;
/// The memory budget of the producer test: small, so that 1,000 producers overrun it many
/// times over (139 MB of bodies at once against 16 MiB).
const PRODUCER_BUDGET: u64 = 16 * MIB;
/// Producers, each on its own connection, one request at a time.
const PRODUCERS: usize = 1000;
/// How long they produce.
const LOAD: Duration = Duration::from_secs(5);
/// What one connection may hold in the server beyond the budget: hyper's read buffer (at most
/// `max_header_bytes` + 16 KiB, 48 KiB by default), its write buffer, the connection task.
const PER_CONNECTION_BYTES: u64 = 64 * 1024;
/// The allocator's slack over the bytes in use (freed memory it keeps), and the broker's own
/// caches (sled's, the partitions' tails) as they warm up.
const SLACK: u64 = 48 * MIB;

/// One HTTP/1.1 answer read off a raw socket.
struct Answer {
    status: u16,
    retry_after: bool,
    close: bool,
    body: Vec<u8>,
}

/// How a request on a raw socket ended.
enum Outcome {
    Answered(Answer),
    /// The server closed the connection before a byte of the answer: a clean close between
    /// requests (a keep-alive connection it ended), the client dials again.
    ClosedBetween,
    /// Reset, or closed part way through the answer.
    Broken(io::Error),
}

/// Sends `request` on `stream` and reads its answer (head, then a `content-length` body).
async fn exchange(stream: &mut TcpStream, request: &[u8]) -> Outcome {
    if let Err(error) = stream.write_all(request).await {
        return Outcome::Broken(error);
    }
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match stream.read(&mut chunk).await {
            Ok(0) if buffer.is_empty() => return Outcome::ClosedBetween,
            Ok(0) => return Outcome::Broken(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            Err(error) => return Outcome::Broken(error),
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines()
            .find_map(|line| line.strip_prefix(&format!("{name}:")).map(str::trim))
            .map(str::to_owned)
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer.split_off(head_end);
    while body.len() < length {
        match stream.read(&mut chunk).await {
            Ok(0) => return Outcome::Broken(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(error) => return Outcome::Broken(error),
        }
    }
    Outcome::Answered(Answer {
        status,
        retry_after: header("retry-after").is_some(),
        close: header("connection").is_some_and(|v| v == "close"),
        body,
    })
}

/// What the producers saw.
#[derive(Default)]
struct Tally {
    acked: Vec<(u64, u64, String)>,
    refused: u64,
    refused_without_retry_after: u64,
    other_status: BTreeMap<u16, u64>,
    broken: Vec<String>,
    closed_between: u64,
}

async fn produce_until(
    address: String,
    request: Arc<Vec<u8>>,
    until: Instant,
    tally: Arc<Mutex<Tally>>,
) {
    let mut stream: Option<TcpStream> = None;
    while Instant::now() < until {
        let mut open = match stream.take() {
            Some(open) => open,
            None => match TcpStream::connect(&address).await {
                Ok(open) => open,
                Err(error) => {
                    tally.lock().await.broken.push(format!("connect: {error}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        match exchange(&mut open, &request).await {
            Outcome::Answered(answer) => {
                let mut tally = tally.lock().await;
                match answer.status {
                    200 => {
                        let reply: Value =
                            serde_json::from_slice(&answer.body).expect("json reply");
                        for message in reply["messages"].as_array().expect("messages") {
                            tally.acked.push((
                                message["partition"].as_u64().expect("partition"),
                                message["offset"].as_u64().expect("offset"),
                                message["id"].as_str().expect("id").to_owned(),
                            ));
                        }
                    }
                    503 => {
                        tally.refused += 1;
                        if !answer.retry_after {
                            tally.refused_without_retry_after += 1;
                        }
                    }
                    other => *tally.other_status.entry(other).or_default() += 1,
                }
                if !answer.close {
                    stream = Some(open);
                }
            }
            Outcome::ClosedBetween => tally.lock().await.closed_between += 1,
            Outcome::Broken(error) => tally.lock().await.broken.push(error.to_string()),
        }
    }
}

fn batch_request(port: u16) -> Vec<u8> {
    let messages: Vec<Value> = (0..100)
        .map(|i| json!({"value_base64": STANDARD.encode(vec![i as u8; 1024])}))
        .collect();
    let body = serde_json::to_vec(&json!({"messages": messages})).expect("json");
    let mut request = format!(
        "POST /v1/topics/load/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_producers_stay_within_the_memory_budget_and_get_answers() {
    let data = tempfile::tempdir().expect("temp dir");
    let budget = PRODUCER_BUDGET.to_string();
    let server = Server::start_with(data.path(), &["--max-memory-bytes", &budget]).await;
    let client = reqwest::Client::new();
    let created = client
        .post(format!("{}/v1/topics", server.base))
        .json(&json!({"name": "load", "partitions": 4}))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);
    let idle = server.memory_kib("VmRSS:") * 1024;

    let address = server.base.trim_start_matches("http://").to_owned();
    let port = address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let request = Arc::new(batch_request(port));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let until = Instant::now() + LOAD;
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            tokio::spawn(produce_until(
                address.clone(),
                Arc::clone(&request),
                until,
                Arc::clone(&tally),
            ))
        })
        .collect();
    for producer in producers {
        producer.await.expect("producer");
    }
    let peak = server.memory_kib("VmHWM:") * 1024;
    let tally = std::mem::take(&mut *tally.lock().await);
    let bound = idle + PRODUCER_BUDGET + PRODUCERS as u64 * PER_CONNECTION_BYTES + SLACK;
    eprintln!(
        "{PRODUCERS} producers for {LOAD:?}: {} messages acked, {} refused (503), {} without Retry-After, other statuses {:?}, {} broken, {} clean closes; RSS idle {} MiB, peak {} MiB, bound {} MiB",
        tally.acked.len(),
        tally.refused,
        tally.refused_without_retry_after,
        tally.other_status,
        tally.broken.len(),
        tally.closed_between,
        idle / MIB,
        peak / MIB,
        bound / MIB,
    );
    assert!(
        tally.refused > 0,
        "the budget was never spent: the test did not overload"
    );
    assert_eq!(
        tally.refused_without_retry_after, 0,
        "every 503 carries Retry-After"
    );
    assert!(
        tally.other_status.is_empty(),
        "only 200 and 503: {:?}",
        tally.other_status
    );
    assert!(
        tally.broken.is_empty(),
        "resets or cut answers: {:?}",
        &tally.broken[..tally.broken.len().min(5)]
    );
    assert!(
        peak <= bound,
        "peak RSS {} MiB over the bound {} MiB",
        peak / MIB,
        bound / MIB
    );

    // Every acked message is there, at the offset its reply gave, with its id.
    let mut stored: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for partition in 0..4 {
        for message in server.read_partition("load", partition).await {
            stored.insert(
                (
                    partition as u64,
                    message["offset"].as_u64().expect("offset"),
                ),
                message["id"].as_str().expect("id").to_owned(),
            );
        }
    }
    assert!(!tally.acked.is_empty(), "nothing was acked");
    let lost = tally
        .acked
        .iter()
        .filter(|(partition, offset, id)| stored.get(&(*partition, *offset)) != Some(id))
        .count();
    let answered = tally.acked.len() as u64 + tally.refused;
    let other_5xx: u64 = tally
        .other_status
        .iter()
        .filter(|(status, _)| **status >= 500 && **status != 503 && **status != 507)
        .map(|(_, count)| count)
        .sum();
    CaseLine::new("G8", "overload-1000-producers")
        .figure("peak RSS MiB", peak / MIB)
        .figure("RSS bound MiB", bound / MIB)
        .figure(
            "% 503",
            format!(
                "{:.1}",
                100.0 * tally.refused as f64 / answered.max(1) as f64
            ),
        )
        .must_be_zero("5xx other than 503/507", other_5xx, answered)
        .must_be_zero("acked lost", lost as u64, tally.acked.len() as u64)
        .record();
    for (partition, offset, id) in &tally.acked {
        assert_eq!(
            stored.get(&(*partition, *offset)),
            Some(id),
            "acked message {partition}/{offset} is readable"
        );
    }
}

/// The memory budget of the non-reader test: the default, which gives an answer up to 16 MiB
/// of room (4 MiB of values: four 1 MB messages, a 5.3 MB answer, more than the kernel's
/// socket buffers take off the server's hands), for far fewer answers than the 50 asked.
const READER_BUDGET: u64 = gateway::limits::memory::DEFAULT_MAX_MEMORY_BYTES as u64;
/// Subscriptions, each with one consumer that never reads its answer.
const NON_READERS: usize = 50;
/// 1 MB messages on the topic.
const BIG_MESSAGES: usize = 40;
/// How far above its idle level the resident set may stay once the answers are dropped: the
/// leases, stats and caches the receives created.
const RESIDUE: u64 = 16 * MIB;
/// The server's write timeout in this test (the default is 10 s).
const WRITE_TIMEOUT_MS: u64 = 2_000;

/// The `wharf_memory_bytes` gauge of `/metrics`.
async fn memory_gauge(client: &reqwest::Client, base: &str) -> u64 {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    text.lines()
        .find_map(|line| line.strip_prefix("wharf_memory_bytes "))
        .and_then(|value| value.trim().parse::<f64>().ok())
        .map_or(0, |value| value as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_that_never_read_are_cut_off_and_their_messages_go_to_others() {
    let data = tempfile::tempdir().expect("temp dir");
    let budget = READER_BUDGET.to_string();
    let timeout = WRITE_TIMEOUT_MS.to_string();
    let server = Server::start_with(
        data.path(),
        &[
            "--max-memory-bytes",
            &budget,
            "--write-timeout-ms",
            &timeout,
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{}{path}", server.base))
            .json(&body)
            .send()
    };
    assert_eq!(
        post("/v1/topics", json!({"name": "big"}))
            .await
            .expect("create")
            .status(),
        201
    );
    for i in 0..NON_READERS {
        let sub = json!({"name": format!("s{i}"), "start": "earliest", "ack_timeout_ms": 2000});
        let created = post("/v1/topics/big/subscriptions", sub)
            .await
            .expect("subscribe");
        assert_eq!(created.status(), 201);
    }
    for i in 0..BIG_MESSAGES {
        let produced = client
            .post(format!("{}/v1/topics/big/messages", server.base))
            .header("content-type", "application/octet-stream")
            .body(vec![i as u8; 1_000_000])
            .send()
            .await
            .expect("produce");
        assert_eq!(produced.status(), 200);
    }
    let idle = server.memory_kib("VmRSS:") * 1024;

    let address: std::net::SocketAddr = server
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    let body = br#"{"max_messages": 1000, "wait_ms": 0}"#;
    let mut sockets = Vec::new();
    for i in 0..NON_READERS {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .set_recv_buffer_size(4096)
            .expect("a small receive buffer");
        let mut stream = socket.connect(address).await.expect("connect");
        let request = format!(
            "POST /v1/topics/big/subscriptions/s{i}/receive HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("send");
        stream.write_all(body).await.expect("send");
        sockets.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(WRITE_TIMEOUT_MS / 2)).await;
    let held = memory_gauge(&client, &server.base).await;
    let peak = server.memory_kib("VmHWM:") * 1024;
    let bound = idle + READER_BUDGET + SLACK;

    // Once the write timeout has passed, the answers are dropped and their bytes returned.
    let deadline = Instant::now() + Duration::from_millis(WRITE_TIMEOUT_MS * 5);
    let mut left = held;
    while left > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = memory_gauge(&client, &server.base).await;
    }
    let after = server.memory_kib("VmRSS:") * 1024;
    eprintln!(
        "{NON_READERS} consumers that never read: {} MiB charged while they held their answers, then {left} bytes; RSS idle {} MiB, peak {} MiB (bound {} MiB), after the write timeout {} MiB",
        held / MIB,
        idle / MIB,
        peak / MIB,
        bound / MIB,
        after / MIB,
    );
    assert!(
        held > 0,
        "some answers were built and held: the test did not overload"
    );
    assert!(
        held <= READER_BUDGET + 2 * MIB,
        "charged {held} bytes, over the budget by more than one message"
    );
    assert!(
        peak <= bound,
        "peak RSS {} MiB over the bound {} MiB",
        peak / MIB,
        bound / MIB
    );
    assert_eq!(
        left, 0,
        "the answers' memory came back after the write timeout"
    );
    // The allocator hands it back to the system within about a second (jemalloc's decay,
    // `.cargo/config.toml`): the resident set is back near its idle level.
    let mut after = after;
    let settle = Instant::now() + Duration::from_secs(5);
    while after > idle + RESIDUE && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = server.memory_kib("VmRSS:") * 1024;
    }
    eprintln!("RSS {} MiB once settled", after / MIB);
    assert!(
        after <= idle + RESIDUE,
        "RSS {} MiB after the write timeout, idle was {} MiB",
        after / MIB,
        idle / MIB
    );

    // What each consumer was answered: its socket still holds the first bytes.
    let mut cut_off = Vec::new();
    let mut refused = Vec::new();
    for (i, socket) in sockets.iter().enumerate() {
        let mut first = [0u8; 12];
        let got = socket.try_read(&mut first).unwrap_or(0);
        match &first[..got] {
            b"HTTP/1.1 200" => cut_off.push(i),
            b"HTTP/1.1 503" => refused.push(i),
            other => panic!("s{i}: answered {:?}", String::from_utf8_lossy(other)),
        }
    }
    eprintln!(
        "{} answers built and cut off by the write timeout, {} refused (503)",
        cut_off.len(),
        refused.len()
    );
    assert!(!cut_off.is_empty() && cut_off.len() + refused.len() == NON_READERS);

    // The cut-off consumers' messages reach a consumer that reads once their leases have
    // ended, and so do those of the refused ones (three of each: 40 MB per subscription
    // is slow to read in a debug build, slower still on a busy machine: each gets its own
    // minute).
    for i in cut_off
        .into_iter()
        .take(3)
        .chain(refused.into_iter().take(3))
    {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = std::collections::BTreeSet::new();
        while seen.len() < BIG_MESSAGES {
            assert!(
                Instant::now() < deadline,
                "s{i}: only {} of {BIG_MESSAGES} delivered",
                seen.len()
            );
            let path = format!("/v1/topics/big/subscriptions/s{i}/receive");
            let answer = post(&path, json!({"max_messages": 10, "wait_ms": 2000}))
                .await
                .expect("receive");
            if answer.status() == 503 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            assert_eq!(answer.status(), 200);
            let answer: Value = answer.json().await.expect("json");
            let messages = answer["messages"].as_array().expect("messages");
            let receipts: Vec<&str> = messages
                .iter()
                .map(|m| m["receipt"].as_str().expect("receipt"))
                .collect();
            for message in messages {
                seen.insert(message["offset"].as_u64().expect("offset"));
            }
            if !receipts.is_empty() {
                let path = format!("/v1/topics/big/subscriptions/s{i}/ack");
                post(&path, json!({"receipts": receipts}))
                    .await
                    .expect("ack");
            }
        }
    }
    drop(sockets);
}
