//! The overload benchmark (run by hand; not a timed test):
//!
//! ```text
//! WHARF_OVERLOAD_SECS=60 cargo test --release -p gateway --test limits limits_overload \
//!     -- --ignored --nocapture
//! ```
//!
//! It starts the `wharf` binary with a small memory budget (1 MiB), drives
//! `WHARF_OVERLOAD_PRODUCERS` (default 64) producers of `WHARF_OVERLOAD_BODY_BYTES` (default
//! 32 KiB) raw messages flat out for `WHARF_OVERLOAD_SECS` (default 60), and reports: requests
//! acked and refused (503 `overloaded`, which must carry `Retry-After`), any other status (a
//! failure), the server's peak RSS against `WHARF_OVERLOAD_RSS_BOUND_MIB` (default 512), that
//! every acked message can be read back, and how soon a produce succeeds after the load stops.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::support::child::{Server, memory_kib};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run by hand (see the module docs); takes a minute"]
async fn overload_is_shed_with_503_memory_stays_bounded_and_no_ack_is_lost() {
    let seconds = env_or("WHARF_OVERLOAD_SECS", 60);
    let producers = env_or("WHARF_OVERLOAD_PRODUCERS", 64);
    let body_bytes = env_or("WHARF_OVERLOAD_BODY_BYTES", 32 * 1024) as usize;
    let rss_bound_mib = env_or("WHARF_OVERLOAD_RSS_BOUND_MIB", 512);
    let data = tempfile::tempdir().expect("dir");
    let budget = (1024 * 1024).to_string();
    let flags = [
        "--fsync",
        "always",
        "--max-memory-bytes",
        &budget,
        "--principal-requests-per-second",
        "0",
    ];
    let server = Server::start_with(data.path(), &flags).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(producers as usize)
        .build()
        .expect("client");
    let created = client
        .post(format!("{}/v1/topics", server.base))
        .json(&json!({"name": "load", "partitions": 4}))
        .send()
        .await
        .expect("create");
    assert_eq!(created.status(), 201);

    let pid = server.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let peak_rss = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak_rss.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(memory_kib(pid, "VmRSS:"), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let (refused, other) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let transport = Arc::new(AtomicU64::new(0));
    let body = vec![b'x'; body_bytes];
    let url = format!("{}/v1/topics/load/messages", server.base);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..producers {
        let (client, url, body, stop) = (client.clone(), url.clone(), body.clone(), stop.clone());
        let (acked, refused, other) = (acked.clone(), refused.clone(), other.clone());
        let transport = transport.clone();
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let response = client
                    .post(&url)
                    .header("content-type", "application/octet-stream")
                    .body(body.clone())
                    .send()
                    .await;
                match response {
                    Ok(response) if response.status() == 200 => {
                        let reply: Value = response.json().await.expect("json");
                        let id = reply["messages"][0]["id"].as_str().expect("id").to_owned();
                        acked.lock().await.push(id);
                    }
                    Ok(response) if response.status() == 503 => {
                        assert!(response.headers().contains_key("retry-after"));
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(response) => {
                        eprintln!("unexpected status {}", response.status());
                        other.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(error) => {
                        eprintln!("transport error (the connection was closed under a refused upload?): {error:?}");
                        transport.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.expect("producer");
    }
    let elapsed = started.elapsed();
    let recovery_started = Instant::now();
    loop {
        let response = client
            .post(&url)
            .body("after")
            .send()
            .await
            .expect("request");
        if response.status() == 200 {
            break;
        }
        assert!(
            recovery_started.elapsed() < Duration::from_secs(10),
            "no recovery"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let recovery = recovery_started.elapsed();
    let _ = sampler.await;

    let acked = acked.lock().await.clone();
    let mut stored = HashSet::new();
    for partition in 0..4 {
        for message in server.read_partition("load", partition).await {
            stored.insert(message["id"].as_str().expect("id").to_owned());
        }
    }
    let lost = acked.iter().filter(|id| !stored.contains(*id)).count();
    let peak_mib = peak_rss.load(Ordering::Relaxed) / 1024;
    let refused = refused.load(Ordering::Relaxed);
    let other = other.load(Ordering::Relaxed);
    let transport = transport.load(Ordering::Relaxed);
    eprintln!(
        "overload: {producers} producers x {body_bytes} B for {:.1} s: {} acked ({:.0}/s, {:.1} MiB/s), \
         {refused} refused 503, {other} other statuses, {transport} transport errors; peak RSS {peak_mib} MiB (bound {rss_bound_mib} MiB); \
         {lost} acked messages lost; first success {:.0} ms after the load stopped",
        elapsed.as_secs_f64(),
        acked.len(),
        acked.len() as f64 / elapsed.as_secs_f64(),
        (acked.len() * body_bytes) as f64 / elapsed.as_secs_f64() / 1_048_576.0,
        recovery.as_secs_f64() * 1000.0,
    );
    assert_eq!(other, 0, "only 200 and 503 are acceptable under overload");
    assert!(
        refused > 0,
        "the load never exceeded the budget; raise WHARF_OVERLOAD_PRODUCERS"
    );
    assert_eq!(lost, 0);
    assert!(
        peak_mib <= rss_bound_mib,
        "peak RSS {peak_mib} MiB over {rss_bound_mib} MiB"
    );
}
