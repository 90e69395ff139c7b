//! The browser guard over real HTTP: requests that a web page makes a browser send to an
//! anonymous server on loopback are refused before they lease or store anything.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gateway::config::{EdgeRaw, RawSettings};
use reqwest::header::{CONTENT_TYPE, HOST, ORIGIN};
use serde_json::{Value, json};

use crate::support::common::{Harness, expect_problem, json_of};

const TOPIC: &str = "guarded";
const SUB: &str = "readers";

/// A server with one topic holding one message, and a subscription from the start.
async fn server_with(edge: EdgeRaw) -> Harness {
    let harness = Harness::start_with(RawSettings {
        edge,
        ..RawSettings::default()
    })
    .await;
    harness.create_topic(json!({ "name": TOPIC })).await;
    harness
        .create_subscription(TOPIC, json!({ "name": SUB }))
        .await;
    harness
        .produce(TOPIC, vec![json!({ "value": "one" })])
        .await;
    harness
}

/// The topic's end offset (one partition): how many messages it ever stored.
async fn stored(harness: &Harness) -> u64 {
    let topic = json_of(harness.get(&format!("/v1/topics/{TOPIC}")).await, 200).await;
    topic["partition_stats"][0]["end_offset"]
        .as_u64()
        .unwrap_or_else(|| panic!("no end offset: {topic}"))
}

async fn in_flight(harness: &Harness) -> Value {
    let path = format!("/v1/topics/{TOPIC}/subscriptions/{SUB}");
    json_of(harness.get(&path).await, 200).await["stats"]["in_flight"].clone()
}

/// The server's own `host:port`, as a browser's `Host` names it.
fn own_host(harness: &Harness) -> String {
    harness.server.address().to_string()
}

async fn produce_text(harness: &Harness, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = harness
        .client
        .post(harness.url(&format!("/v1/topics/{TOPIC}/messages")))
        .header(CONTENT_TYPE, "text/plain")
        .body("from a web page");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("request")
}

#[tokio::test]
async fn a_cross_origin_text_plain_produce_is_refused_and_stores_nothing() {
    let harness = server_with(EdgeRaw::default()).await;
    assert_eq!(stored(&harness).await, 1);
    let response = produce_text(&harness, &[("origin", "http://evil.example")]).await;
    expect_problem(response, 403, "origin_not_allowed").await;
    let response = produce_text(&harness, &[("origin", "null")]).await;
    expect_problem(response, 403, "origin_not_allowed").await;
    assert_eq!(
        stored(&harness).await,
        1,
        "a refused produce stored a message"
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_cross_origin_stream_is_refused_and_leases_nothing() {
    let harness = server_with(EdgeRaw::default()).await;
    let stream = harness.url(&format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/stream"));
    let response = harness
        .client
        .get(&stream)
        .header(ORIGIN, "https://evil.example")
        .send()
        .await
        .expect("request");
    expect_problem(response, 403, "origin_not_allowed").await;
    let no_cors = harness
        .client
        .get(&stream)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("request");
    expect_problem(no_cors, 403, "origin_not_allowed").await;
    assert_eq!(
        in_flight(&harness).await,
        0,
        "a refused stream leased a message"
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_dns_rebinding_host_is_refused_even_with_a_matching_origin() {
    let harness = server_with(EdgeRaw::default()).await;
    let port = harness.server.address().port();
    let rebound = format!("evil.example:{port}");
    let response = produce_text(
        &harness,
        &[("host", &rebound), ("origin", &format!("http://{rebound}"))],
    )
    .await;
    expect_problem(response, 403, "host_not_allowed").await;
    let response = harness
        .client
        .get(harness.url(&format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/stream")))
        .header(HOST, &rebound)
        .send()
        .await
        .expect("request");
    expect_problem(response, 403, "host_not_allowed").await;
    assert_eq!(stored(&harness).await, 1);
    assert_eq!(in_flight(&harness).await, 0);
    harness.stop().await;
}

#[tokio::test]
async fn loopback_hosts_without_origin_same_origin_and_allowed_origins_are_served() {
    let harness = server_with(EdgeRaw {
        allowed_origins: Some("http://localhost:3000, https://app.example".into()),
        ..EdgeRaw::default()
    })
    .await;
    let port = harness.server.address().port();
    let own = format!("http://{}", own_host(&harness));
    let localhost = format!("localhost:{port}");
    let ok = [
        vec![],
        vec![("host", localhost.as_str())],
        vec![("origin", own.as_str())],
        vec![("origin", "http://localhost:3000")],
        vec![
            ("origin", "https://app.example"),
            ("sec-fetch-site", "cross-site"),
        ],
        vec![("sec-fetch-site", "same-origin")],
        vec![("sec-fetch-site", "none")],
    ];
    for headers in &ok {
        let response = produce_text(&harness, headers).await;
        json_of(response, 200).await;
    }
    assert_eq!(stored(&harness).await, 1 + ok.len() as u64);
    let response = produce_text(&harness, &[("origin", "http://localhost:3001")]).await;
    expect_problem(response, 403, "origin_not_allowed").await;
    harness.stop().await;
}

#[tokio::test]
async fn allowed_hosts_lets_a_named_host_through_and_no_other() {
    let harness = server_with(EdgeRaw {
        allowed_hosts: Some("wharf.test".into()),
        ..EdgeRaw::default()
    })
    .await;
    let port = harness.server.address().port();
    let named = format!("wharf.test:{port}");
    json_of(produce_text(&harness, &[("host", &named)]).await, 200).await;
    let same_origin = format!("http://{named}");
    let response = produce_text(&harness, &[("host", &named), ("origin", &same_origin)]).await;
    json_of(response, 200).await;
    let other = format!("other.test:{port}");
    expect_problem(
        produce_text(&harness, &[("host", &other)]).await,
        403,
        "host_not_allowed",
    )
    .await;
    assert_eq!(stored(&harness).await, 3);
    harness.stop().await;
}

#[tokio::test]
async fn with_auth_on_any_host_reaches_the_token_check_but_origins_are_still_checked() {
    let harness = Harness::start_with(RawSettings {
        edge: EdgeRaw {
            auth_hs256_secret: Some("s".repeat(40)),
            ..EdgeRaw::default()
        },
        ..RawSettings::default()
    })
    .await;
    let response = produce_text(&harness, &[("host", "evil.example")]).await;
    expect_problem(response, 401, "unauthorized").await;
    let response = produce_text(&harness, &[("origin", "http://evil.example")]).await;
    expect_problem(response, 403, "origin_not_allowed").await;
    harness.stop().await;
}

/// Runs `wharf serve` with `args` and returns its stderr once it exits; fails if it is still
/// serving after 20 s.
fn serve_refused(args: &[&str]) -> String {
    let data = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wharf"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .args(args)
        .env_remove("WHARF_ALLOWED_HOSTS")
        .env_remove("WHARF_ALLOWED_ORIGINS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn wharf");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            child.kill().expect("kill");
            panic!("wharf serve {args:?} started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn bad_allowed_hosts_and_origins_are_refused_at_start_naming_the_setting() {
    let stderr = serve_refused(&["--allowed-origins", "app.example"]);
    assert!(
        stderr.contains("allowed_origins") && stderr.contains("app.example"),
        "{stderr}"
    );
    let stderr = serve_refused(&["--allowed-origins", "https://app.example/path"]);
    assert!(stderr.contains("allowed_origins"), "{stderr}");
    let stderr = serve_refused(&["--allowed-hosts", "http://wharf.test"]);
    assert!(stderr.contains("allowed_hosts"), "{stderr}");
    let stderr = serve_refused(&["--allowed-hosts", "*"]);
    assert!(stderr.contains("allowed_hosts"), "{stderr}");
}
