//! JSON calls the process-level cluster tests make against a node's public port.

#![allow(
    dead_code,
    reason = "each test crate uses a different part of the helpers"
)]

use std::time::{Duration, Instant};

use serde_json::Value;

/// How long [`post_when_ready`] asks again while a node answers 503.
const READY_WAIT: Duration = Duration::from_secs(20);

/// POSTs `body` as JSON to `url`: the status and the JSON answer (null when there is none).
pub async fn post(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let reply = http.post(url).json(&body).send().await.expect("an answer");
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

/// [`post`], again while the answer is 503 (a group electing, a leader not known yet), for
/// up to [`READY_WAIT`].
pub async fn post_when_ready(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let deadline = Instant::now() + READY_WAIT;
    loop {
        let (status, answer) = post(http, url, body.clone()).await;
        if status != 503 || Instant::now() >= deadline {
            return (status, answer);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
