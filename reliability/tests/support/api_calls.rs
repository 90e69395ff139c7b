//! JSON calls the cluster tests (`tests/cluster/`) make against a node's public port.

use std::time::{Duration, Instant};

use serde_json::Value;

/// How long [`post_when_ready`] asks again while a node answers 503.
const READY_WAIT: Duration = Duration::from_secs(20);

/// How long [`leaders`] waits for every partition of a topic to have a leader.
const LEADERS_WAIT: Duration = Duration::from_secs(20);

/// POSTs `body` as JSON to `url`: the status and the JSON answer (null when there is none).
pub async fn post(http: &reqwest::Client, url: impl reqwest::IntoUrl, body: Value) -> (u16, Value) {
    let reply = http.post(url).json(&body).send().await.expect("an answer");
    let status = reply.status().as_u16();
    (status, reply.json().await.unwrap_or(Value::Null))
}

/// [`post`], again while the answer is 503 (a group electing, a leader not known yet), for
/// up to [`READY_WAIT`].
pub async fn post_when_ready(http: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    post_when_ready_within(http, url, body, READY_WAIT).await
}

/// [`post`], again while the answer is 503, for up to `wait`.
pub async fn post_when_ready_within(
    http: &reqwest::Client,
    url: impl reqwest::IntoUrl + Clone,
    body: Value,
    wait: Duration,
) -> (u16, Value) {
    let deadline = Instant::now() + wait;
    loop {
        let (status, answer) = post(http, url.clone(), body.clone()).await;
        if status != 503 || Instant::now() >= deadline {
            return (status, answer);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates a topic through the node at `url` (`topic` is the request's body), then each of
/// `subscriptions` (request bodies) through the node at `subscribe_at`; each call asked again
/// while answered 503, for up to `wait`, and each must be answered 201.
pub async fn create_topic(
    http: &reqwest::Client,
    url: &str,
    topic: Value,
    subscribe_at: &str,
    subscriptions: &[Value],
    wait: Duration,
) {
    let name = topic["name"].as_str().expect("the topic's name").to_owned();
    let (status, body) =
        post_when_ready_within(http, format!("{url}/v1/topics"), topic, wait).await;
    assert_eq!(status, 201, "create topic {name}: {body}");
    let subscriptions_url = format!("{subscribe_at}/v1/topics/{name}/subscriptions");
    for subscription in subscriptions {
        let (status, body) =
            post_when_ready_within(http, &subscriptions_url, subscription.clone(), wait).await;
        assert_eq!(
            status, 201,
            "create subscription {subscription} of {name}: {body}"
        );
    }
}

/// The leader of each partition of `topic` (in partition order) as node `url` knows it, once
/// all have one (up to [`LEADERS_WAIT`]).
pub async fn leaders(http: &reqwest::Client, url: &str, topic: &str) -> Vec<u64> {
    leaders_within(http, url, topic, LEADERS_WAIT).await
}

/// [`leaders`], waiting up to `wait`.
pub async fn leaders_within(
    http: &reqwest::Client,
    url: &str,
    topic: &str,
    wait: Duration,
) -> Vec<u64> {
    let deadline = Instant::now() + wait;
    loop {
        let reply = http
            .get(format!("{url}/v1/cluster"))
            .send()
            .await
            .expect("an answer");
        let view: Value = reply.json().await.unwrap_or(Value::Null);
        let mut seen: Vec<(u64, Option<u64>)> = view["partitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["topic"] == topic)
            .filter_map(|p| Some((p["partition"].as_u64()?, p["leader"].as_u64())))
            .collect();
        seen.sort_unstable();
        if !seen.is_empty() && seen.iter().all(|(_, l)| l.is_some()) {
            return seen.into_iter().filter_map(|(_, l)| l).collect();
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: partitions without a leader: {view}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
