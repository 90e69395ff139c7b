//! Connection hygiene over raw TCP: slowloris clients are cut at the header-read timeout
//! while a normal client keeps being served; header count and size, the connection cap and
//! the body-read timeout are each checked on both sides of their bound.

use std::time::{Duration, Instant};

use gateway::config::EdgeRaw;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wharf_reliability::CaseLine;

use crate::support::common::Harness;
use crate::support::edge_common::{raw_exchange, status_of, without_principal_limit};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_connections_are_closed_at_the_header_timeout_while_others_are_served() {
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        header_read_timeout_ms: Some("1000".into()),
        ..EdgeRaw::default()
    }))
    .await;
    let address = harness.server.address();
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..200 {
        let stream = TcpStream::connect(address).await.expect("connect");
        slow.push(tokio::spawn(async move {
            let mut stream = stream;
            let head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ";
            for byte in head.iter().cycle() {
                if stream.write_all(&[*byte]).await.is_err() {
                    break;
                }
                let mut buffer = [0u8; 256];
                let read = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buffer));
                if let Ok(Ok(0) | Err(_)) = read.await {
                    break;
                }
                if started.elapsed() > Duration::from_secs(5) {
                    return None;
                }
            }
            Some(started.elapsed())
        }));
    }
    let mut served = 0;
    while started.elapsed() < Duration::from_millis(1500) {
        assert_eq!(harness.get("/healthz").await.status(), 200);
        served += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut closed_after = Vec::new();
    for task in slow {
        closed_after.push(task.await.expect("task"));
    }
    let late = closed_after
        .iter()
        .filter(|closed| closed.is_none_or(|after| after >= Duration::from_millis(2500)))
        .count();
    let slowest = closed_after
        .iter()
        .flatten()
        .max()
        .copied()
        .unwrap_or_default();
    CaseLine::new("G5", "slowloris")
        .must_be_zero(
            "stalled sockets not closed within 2.5 s",
            late as u64,
            closed_after.len() as u64,
        )
        .figure("slowest close s", format!("{:.2}", slowest.as_secs_f64()))
        .figure("legitimate requests served", served)
        .record();
    for closed in closed_after {
        let closed_after = closed.expect("closed within 5 s");
        assert!(
            closed_after < Duration::from_millis(2500),
            "closed after {closed_after:?}"
        );
    }
    assert!(served >= 10, "the normal client was served {served} times");
    harness.stop().await;
}

fn request_with_headers(count: usize, value_bytes: usize) -> Vec<u8> {
    let mut request =
        String::from("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for n in 0..count.saturating_sub(2) {
        request.push_str(&format!("X-H{n}: {}\r\n", "v".repeat(value_bytes)));
    }
    request.push_str("\r\n");
    request.into_bytes()
}

/// Asserts `reply` is a `headers_too_large` problem naming `limit`.
fn assert_problem(reply: &str, limit: &str) {
    let lower = reply.to_ascii_lowercase();
    assert!(
        lower.contains("content-type: application/problem+json"),
        "{reply}"
    );
    assert!(reply.contains(r#""code":"headers_too_large""#), "{reply}");
    assert!(reply.contains(limit), "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_count_and_size_are_checked_on_both_sides() {
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        max_headers: Some("16".into()),
        max_header_bytes: Some("4096".into()),
        ..EdgeRaw::default()
    }))
    .await;
    let address = harness.server.address();
    let wait = Duration::from_secs(5);
    let status =
        |request: Vec<u8>| async move { status_of(&raw_exchange(address, &request, wait).await) };
    assert_eq!(
        status(request_with_headers(15, 1)).await,
        200,
        "limit - 1 headers"
    );
    assert_eq!(status(request_with_headers(16, 1)).await, 200, "the limit");
    let too_many_reply = raw_exchange(address, &request_with_headers(17, 1), wait).await;
    let too_many = status_of(&too_many_reply);
    assert_eq!(too_many, 431, "limit + 1 headers");
    assert_problem(&too_many_reply, "max_headers");
    let sized = |total: usize| {
        let base = request_with_headers(2, 0).len();
        let line = "X-Big: \r\n".len();
        let mut request =
            String::from("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
        request.push_str(&format!(
            "X-Big: {}\r\n\r\n",
            "v".repeat(total - base - line)
        ));
        request.into_bytes()
    };
    assert_eq!(sized(4000).len(), 4000);
    assert_eq!(status(sized(4000)).await, 200, "under the size limit");
    let too_big_reply = raw_exchange(address, &sized(4200), wait).await;
    let too_big = status_of(&too_big_reply);
    assert_problem(&too_big_reply, "max_header_bytes");
    let accepted = [too_many, too_big].iter().filter(|s| **s < 400).count();
    CaseLine::new("G4", "header-limits")
        .must_be_zero("accepted oversized heads", accepted as u64, 2)
        .record();
    assert_eq!(too_big, 431, "over the size limit");
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_get_503_at_once() {
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        max_connections: Some("2".into()),
        ..EdgeRaw::default()
    }))
    .await;
    let address = harness.server.address();
    let first = TcpStream::connect(address).await.expect("connect");
    let second = TcpStream::connect(address).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let reply = raw_exchange(
        address,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n",
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(status_of(&reply), 503, "{reply}");
    assert!(
        reply.contains("overloaded") && reply.to_lowercase().contains("retry-after"),
        "{reply}"
    );
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reply = raw_exchange(
            address,
            b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            Duration::from_secs(2),
        )
        .await;
        if status_of(&reply) == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "a freed slot is never reused: {reply}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(second);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_slower_than_the_body_timeout_gets_408_and_a_prompt_one_succeeds() {
    let harness = Harness::start_with(without_principal_limit(EdgeRaw {
        body_read_timeout_ms: Some("300".into()),
        ..EdgeRaw::default()
    }))
    .await;
    harness.create_topic(serde_json::json!({"name": "t"})).await;
    let address = harness.server.address();
    let head = "POST /v1/topics/t/messages HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n";
    let started = Instant::now();
    let slow = raw_exchange(
        address,
        format!("{head}12345").as_bytes(),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(status_of(&slow), 408, "{slow}");
    assert!(slow.contains("request_timeout"), "{slow}");
    assert!(started.elapsed() < Duration::from_secs(3));
    let prompt = raw_exchange(
        address,
        format!("{head}1234567890").as_bytes(),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(status_of(&prompt), 200, "{prompt}");
    harness.stop().await;
}
