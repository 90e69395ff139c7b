//! Server-Sent Events delivery over real HTTP: flow control by `max_in_flight`, heartbeats,
//! disconnects, reconnects with `Last-Event-ID`, and the end of a stream.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use reqwest::Response;
use serde_json::{Value, json};

use crate::restartable::{Node, json_of, text};

const TOPIC: &str = "feed";
const SUB: &str = "s";

/// One frame of an event stream.
#[derive(Debug)]
enum Frame {
    /// A comment line (`: text`): a heartbeat.
    Comment(String),
    /// An event.
    Event {
        event: String,
        id: Option<String>,
        data: String,
    },
}

/// Reads frames off a `text/event-stream` response.
struct SseReader {
    response: Response,
    buffer: String,
}

/// What waiting for a frame gave.
#[derive(Debug)]
enum Next {
    Frame(Frame),
    TimedOut,
    Ended,
}

impl SseReader {
    async fn open(node: &Node, query: &str, last_event_id: Option<&str>) -> SseReader {
        let path = format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/stream{query}");
        let mut request = node.client.get(node.url(&path));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.expect("stream request");
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"]
            .to_str()
            .expect("content type")
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        SseReader {
            response,
            buffer: String::new(),
        }
    }

    /// The next frame, waiting at most `limit`.
    async fn next(&mut self, limit: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                return Next::Frame(parse_frame(frame.trim_end()));
            }
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return Next::TimedOut,
                Ok(Ok(Some(chunk))) => {
                    self.buffer
                        .push_str(std::str::from_utf8(&chunk).expect("UTF-8 stream"));
                }
                Ok(Ok(None) | Err(_)) => return Next::Ended,
            }
        }
    }

    /// The next `message` event within `limit`, counting heartbeats passed on the way.
    async fn next_message(&mut self, limit: Duration, heartbeats: &mut usize) -> Option<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Next::Frame(Frame::Comment(comment)) => {
                    assert_eq!(comment, "heartbeat");
                    *heartbeats += 1;
                }
                Next::Frame(Frame::Event { event, id, data }) => {
                    assert_declared(&event, id.as_deref(), &data);
                    assert_eq!(event, "message", "{data}");
                    let message: Value = serde_json::from_str(&data).expect("message JSON");
                    assert_eq!(
                        id.as_deref(),
                        message["receipt"].as_str(),
                        "id is the receipt"
                    );
                    return Some(message);
                }
                Next::TimedOut => return None,
                Next::Ended => panic!("the stream ended"),
            }
        }
    }
}

/// Asserts an event is what the OpenAPI document declares a stream's event to be (its
/// `text/event-stream` schema, which schemathesis checks each parsed event against): the
/// required fields there, `event` one of its values, `id` and `data` strings.
fn assert_declared(event: &str, id: Option<&str>, data: &str) {
    let document: Value =
        serde_json::from_str(gateway::openapi::pretty_json()).expect("the document is JSON");
    let stream = &document["paths"]["/v1/topics/{topic}/subscriptions/{sub}/stream"]["get"];
    let schema = &stream["responses"]["200"]["content"]["text/event-stream"]["schema"];
    let name = schema["$ref"].as_str().expect("a named event schema");
    let schema = &document["components"]["schemas"][name.rsplit('/').next().unwrap_or(name)];
    let parsed = json!({ "event": event, "id": id, "data": data });
    for field in schema["required"].as_array().expect("required fields") {
        let field = field.as_str().expect("a field name");
        assert!(!parsed[field].is_null(), "{field} missing from {parsed}");
    }
    let kinds = &schema["properties"]["event"]["$ref"];
    let kinds = &document["components"]["schemas"][kinds
        .as_str()
        .and_then(|r| r.rsplit('/').next())
        .expect("the event kinds")];
    let kinds = kinds["enum"].as_array().expect("event kinds");
    assert!(
        kinds.contains(&json!(event)),
        "event {event} not in {kinds:?}"
    );
    assert_eq!(schema["properties"]["data"]["type"], "string");
}

fn parse_frame(frame: &str) -> Frame {
    if let Some(comment) = frame.strip_prefix(':') {
        return Frame::Comment(comment.trim().to_owned());
    }
    let (mut event, mut id, mut data) = (String::from("message"), None, String::new());
    for line in frame.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value).to_owned();
        match field {
            "event" => event = value,
            "id" => id = Some(value),
            "data" => data.push_str(&value),
            _ => {}
        }
    }
    Frame::Event { event, id, data }
}

async fn setup(node: &Node, ack_timeout_ms: u64) {
    node.create_topic(json!({ "name": TOPIC })).await;
    node.create_subscription(
        TOPIC,
        json!({ "name": SUB, "ack_timeout_ms": ack_timeout_ms }),
    )
    .await;
}

async fn produce(node: &Node, count: usize) {
    let batch = (0..count)
        .map(|i| json!({ "value": format!("m{i}") }))
        .collect();
    node.produce(TOPIC, batch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_holds_at_most_max_in_flight_unacked_messages_until_one_is_acked() {
    let node = Node::start().await;
    setup(&node, 30_000).await;
    let mut stream = SseReader::open(&node, "?max_in_flight=2&heartbeat_ms=200", None).await;
    produce(&node, 5).await;

    let mut heartbeats = 0;
    let mut held = Vec::new();
    for _ in 0..2 {
        let message = stream
            .next_message(Duration::from_secs(5), &mut heartbeats)
            .await
            .expect("a message within 5 s");
        assert_eq!(message["delivery_attempt"], 1, "{message}");
        assert!(message["publish_time_ms"].is_u64(), "{message}");
        assert_eq!(message["partition"], 0, "{message}");
        held.push(message);
    }
    heartbeats = 0;
    let third = stream
        .next_message(Duration::from_millis(800), &mut heartbeats)
        .await;
    assert!(
        third.is_none(),
        "a third message while two are unacked: {third:?}"
    );
    assert!(
        heartbeats >= 1,
        "no heartbeat within 800 ms at heartbeat_ms=200"
    );
    assert_eq!(node.stats(TOPIC, SUB).await["in_flight"], 2);

    let mut values = Vec::new();
    while let Some(message) = held.pop() {
        values.push(text(&message, "value"));
        node.ack(TOPIC, SUB, &[text(&message, "receipt")]).await;
        if values.len() + held.len() < 5 {
            let next = stream
                .next_message(Duration::from_secs(3), &mut heartbeats)
                .await
                .expect("the next message after an ack");
            held.insert(0, next);
        }
    }
    values.sort();
    assert_eq!(values, ["m0", "m1", "m2", "m3", "m4"]);
    assert_eq!(node.stats(TOPIC, SUB).await["acked"], 5);

    tokio::time::timeout(Duration::from_secs(10), node.stop())
        .await
        .expect("an open stream does not hold up a graceful shutdown");
    let ended = stream.next(Duration::from_secs(5)).await;
    assert!(matches!(ended, Next::Ended), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_client_disconnects_its_unacked_messages_come_back_through_receive() {
    let node = Node::start().await;
    setup(&node, 1000).await;
    let mut stream = SseReader::open(&node, "?max_in_flight=2&heartbeat_ms=100", None).await;
    produce(&node, 4).await;
    let mut heartbeats = 0;
    let mut streamed = BTreeSet::new();
    for _ in 0..2 {
        let message = stream
            .next_message(Duration::from_secs(5), &mut heartbeats)
            .await
            .expect("a message");
        streamed.insert(text(&message, "value"));
    }
    drop(stream);

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut received = BTreeSet::new();
    while received.len() < 4 {
        assert!(Instant::now() < deadline, "got only {received:?}");
        let got = node
            .receive(TOPIC, SUB, json!({ "max_messages": 10, "wait_ms": 1000 }))
            .await;
        for message in &got {
            let value = text(message, "value");
            let attempt = if streamed.contains(&value) { 2 } else { 1 };
            assert_eq!(message["delivery_attempt"], attempt, "{message}");
            node.ack(TOPIC, SUB, &[text(message, "receipt")]).await;
            assert!(received.insert(value), "{message}");
        }
    }
    let quiet = node.receive(TOPIC, SUB, json!({ "wait_ms": 1500 })).await;
    assert!(quiet.is_empty(), "{quiet:?}");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_counts_the_last_event_id_against_max_in_flight_while_it_is_leased() {
    let node = Node::start().await;
    setup(&node, 30_000).await;
    produce(&node, 2).await;
    let mut heartbeats = 0;
    let mut first = SseReader::open(&node, "?max_in_flight=1&heartbeat_ms=200", None).await;
    let held = first
        .next_message(Duration::from_secs(5), &mut heartbeats)
        .await
        .expect("a message");
    drop(first);
    let receipt = text(&held, "receipt");

    let mut second =
        SseReader::open(&node, "?max_in_flight=1&heartbeat_ms=200", Some(&receipt)).await;
    let early = second
        .next_message(Duration::from_millis(800), &mut heartbeats)
        .await;
    assert!(early.is_none(), "the held message did not count: {early:?}");
    node.ack(TOPIC, SUB, &[receipt]).await;
    let next = second
        .next_message(Duration::from_secs(3), &mut heartbeats)
        .await
        .expect("the next message once the held one is acked");
    assert_ne!(next["id"], held["id"]);
    assert_eq!(next["delivery_attempt"], 1);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_subscription_ends_its_streams_with_an_error_event() {
    let node = Node::start().await;
    setup(&node, 30_000).await;
    let mut stream = SseReader::open(&node, "?heartbeat_ms=100", None).await;
    assert!(matches!(
        stream.next(Duration::from_secs(3)).await,
        Next::Frame(Frame::Comment(_))
    ));
    let deleted = node
        .client
        .delete(node.url(&format!("/v1/topics/{TOPIC}/subscriptions/{SUB}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 204);
    let deadline = Instant::now() + Duration::from_secs(5);
    let problem = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match stream.next(left).await {
            Next::Frame(Frame::Comment(_)) => continue,
            Next::Frame(Frame::Event { event, id, data }) => {
                assert_declared(&event, id.as_deref(), &data);
                assert_eq!(event, "error", "{data}");
                break serde_json::from_str::<Value>(&data).expect("problem JSON");
            }
            other => panic!("no error event: {other:?}"),
        }
    };
    assert_eq!(problem["code"], "subscription_not_found", "{problem}");
    assert!(matches!(
        stream.next(Duration::from_secs(3)).await,
        Next::Ended
    ));

    let gone = node
        .client
        .get(node.url(&format!("/v1/topics/{TOPIC}/subscriptions/{SUB}/stream")))
        .send()
        .await
        .expect("stream request");
    assert_eq!(json_of(gone, 404).await["code"], "subscription_not_found");
    node.stop().await;
}
