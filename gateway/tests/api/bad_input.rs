//! Bad input gets a 4xx problem+json with the documented code, and changes nothing.

use gateway::config::RawSettings;
use reqwest::Method;
use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::common::{Harness, expect_problem, json_of, problem_leaks};

const MAX_BODY: usize = 64 * 1024;
const MAX_MESSAGE: usize = 1024;

/// One bad request and the problem it must get.
struct Case {
    name: &'static str,
    method: Method,
    path: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
}

fn case(
    name: &'static str,
    method: Method,
    path: &str,
    body: Value,
    status: u16,
    code: &'static str,
) -> Case {
    Case {
        name,
        method,
        path: path.to_owned(),
        content_type: Some("application/json"),
        body: body.to_string().into_bytes(),
        status,
        code,
    }
}

fn raw(
    name: &'static str,
    path: &str,
    content_type: Option<&'static str>,
    body: &[u8],
    status: u16,
    code: &'static str,
) -> Case {
    Case {
        name,
        method: Method::POST,
        path: path.to_owned(),
        content_type,
        body: body.to_vec(),
        status,
        code,
    }
}

fn cases() -> Vec<Case> {
    use Method as M;
    let produce = "/v1/topics/t/messages";
    let receive = "/v1/topics/t/subscriptions/s/receive";
    let ack = "/v1/topics/t/subscriptions/s/ack";
    let many: Vec<Value> = (0..1001).map(|_| json!({ "value": "x" })).collect();
    let bad = "invalid_request";
    vec![
        raw(
            "malformed JSON",
            "/v1/topics",
            Some("application/json"),
            b"{\"name\": ",
            400,
            bad,
        ),
        case(
            "wrong type",
            M::POST,
            "/v1/topics",
            json!({ "name": 5 }),
            400,
            bad,
        ),
        case(
            "unknown field",
            M::POST,
            "/v1/topics",
            json!({ "name": "x", "colour": 1 }),
            400,
            bad,
        ),
        case(
            "empty name",
            M::POST,
            "/v1/topics",
            json!({ "name": "" }),
            400,
            bad,
        ),
        case(
            "reserved name",
            M::POST,
            "/v1/topics",
            json!({ "name": "__x" }),
            400,
            bad,
        ),
        case(
            "slash in name",
            M::POST,
            "/v1/topics",
            json!({ "name": "a/b" }),
            400,
            bad,
        ),
        case(
            "201-character name",
            M::POST,
            "/v1/topics",
            json!({ "name": "a".repeat(201) }),
            400,
            bad,
        ),
        case(
            "zero partitions",
            M::POST,
            "/v1/topics",
            json!({ "name": "z", "partitions": 0 }),
            400,
            bad,
        ),
        case(
            "duplicate topic",
            M::POST,
            "/v1/topics",
            json!({ "name": "t" }),
            409,
            "topic_exists",
        ),
        raw(
            "topic create as text",
            "/v1/topics",
            Some("text/plain"),
            b"{\"name\":\"y\"}",
            415,
            "unsupported_media_type",
        ),
        case(
            "unknown topic",
            M::GET,
            "/v1/topics/nope",
            json!(null),
            404,
            "topic_not_found",
        ),
        case(
            "unknown subscription",
            M::GET,
            "/v1/topics/t/subscriptions/nope",
            json!(null),
            404,
            "subscription_not_found",
        ),
        case(
            "produce to unknown topic",
            M::POST,
            "/v1/topics/nope/messages",
            json!({ "messages": [{ "value": "x" }] }),
            404,
            "topic_not_found",
        ),
        case(
            "empty batch",
            M::POST,
            produce,
            json!({ "messages": [] }),
            400,
            bad,
        ),
        case(
            "1001 messages",
            M::POST,
            produce,
            json!({ "messages": many }),
            400,
            bad,
        ),
        case(
            "both value fields",
            M::POST,
            produce,
            json!({ "messages": [{ "value": "x", "value_base64": "eA==" }] }),
            400,
            bad,
        ),
        case(
            "neither value field",
            M::POST,
            produce,
            json!({ "messages": [{ "key": "k" }] }),
            400,
            bad,
        ),
        case(
            "invalid base64",
            M::POST,
            produce,
            json!({ "messages": [{ "value_base64": "!!not base64" }] }),
            400,
            bad,
        ),
        case(
            "unknown message field",
            M::POST,
            produce,
            json!({ "messages": [{ "value": "x", "priority": 5 }] }),
            400,
            bad,
        ),
        case(
            "value over max_message_bytes",
            M::POST,
            produce,
            json!({ "messages": [{ "value": "x".repeat(MAX_MESSAGE + 1) }] }),
            413,
            "message_too_large",
        ),
        case(
            "bad ack mode",
            M::POST,
            &format!("{produce}?ack=maybe"),
            json!({ "messages": [{ "value": "x" }] }),
            400,
            bad,
        ),
        case(
            "key query on a JSON batch",
            M::POST,
            &format!("{produce}?key=k"),
            json!({ "messages": [{ "value": "x" }] }),
            400,
            bad,
        ),
        raw(
            "raw body over max_message_bytes",
            produce,
            Some("text/plain"),
            &vec![b'x'; MAX_MESSAGE + 1],
            413,
            "message_too_large",
        ),
        raw(
            "body over max_body_bytes",
            produce,
            None,
            &vec![b'x'; MAX_BODY + 1],
            413,
            "message_too_large",
        ),
        case(
            "max_messages 0",
            M::POST,
            receive,
            json!({ "max_messages": 0 }),
            400,
            bad,
        ),
        case(
            "max_messages 1001",
            M::POST,
            receive,
            json!({ "max_messages": 1001 }),
            400,
            bad,
        ),
        case(
            "wait_ms 60001",
            M::POST,
            receive,
            json!({ "wait_ms": 60001 }),
            400,
            bad,
        ),
        case(
            "ack_timeout_ms 999",
            M::POST,
            receive,
            json!({ "ack_timeout_ms": 999, "wait_ms": 0 }),
            400,
            bad,
        ),
        case(
            "negative max_messages",
            M::POST,
            receive,
            json!({ "max_messages": -1 }),
            400,
            bad,
        ),
        raw(
            "receive with a form body",
            receive,
            Some("application/x-www-form-urlencoded"),
            b"max_messages=1",
            415,
            "unsupported_media_type",
        ),
        case(
            "receipts not a list",
            M::POST,
            ack,
            json!({ "receipts": "garbage" }),
            400,
            bad,
        ),
        case(
            "no receipts",
            M::POST,
            ack,
            json!({ "receipts": [] }),
            400,
            bad,
        ),
        case(
            "extend below one second",
            M::POST,
            "/v1/topics/t/subscriptions/s/extend",
            json!({ "receipts": ["r"], "ack_timeout_ms": 999 }),
            400,
            bad,
        ),
        case(
            "subscription lease 999",
            M::POST,
            "/v1/topics/t/subscriptions",
            json!({ "name": "s2", "ack_timeout_ms": 999 }),
            400,
            bad,
        ),
        case(
            "duplicate subscription",
            M::POST,
            "/v1/topics/t/subscriptions",
            json!({ "name": "s" }),
            409,
            "subscription_exists",
        ),
        case(
            "patch with a wrong type",
            M::PATCH,
            "/v1/topics/t",
            json!({ "retention_ms": "soon" }),
            400,
            bad,
        ),
        case(
            "unknown partition",
            M::GET,
            "/v1/topics/t/partitions/9/messages",
            json!(null),
            404,
            "partition_not_found",
        ),
        case(
            "non-numeric partition",
            M::GET,
            "/v1/topics/t/partitions/x/messages",
            json!(null),
            400,
            bad,
        ),
        case(
            "offset past the end",
            M::GET,
            "/v1/topics/t/partitions/0/messages?offset=999",
            json!(null),
            400,
            "offset_out_of_range",
        ),
        case(
            "unknown query parameter",
            M::GET,
            "/v1/topics/t/partitions/0/messages?ofset=1",
            json!(null),
            400,
            bad,
        ),
    ]
}

async fn setup() -> Harness {
    let harness = Harness::start_with(RawSettings {
        max_body_bytes: Some(MAX_BODY.to_string()),
        ..RawSettings::default()
    })
    .await;
    harness
        .create_topic(json!({ "name": "t", "partitions": 2, "max_message_bytes": MAX_MESSAGE }))
        .await;
    harness
        .create_subscription("t", json!({ "name": "s", "start": "earliest" }))
        .await;
    harness
}

async fn snapshot(harness: &Harness) -> (Value, Value) {
    let topics = json_of(harness.get("/v1/topics").await, 200).await;
    let subscription = json_of(harness.get("/v1/topics/t/subscriptions/s").await, 200).await;
    (topics, subscription)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_problem_json() {
    let harness = setup().await;
    let before = snapshot(&harness).await;
    let cases = cases();
    assert!(cases.len() >= 20);
    let total = cases.len() as u64;
    let mut server_errors = 0;
    let mut leaks = 0;
    let mut codes = std::collections::BTreeSet::new();
    for case in cases {
        let mut request = harness
            .client
            .request(case.method.clone(), harness.url(&case.path));
        if case.method != Method::GET {
            request = request.body(case.body.clone());
            if let Some(content_type) = case.content_type {
                request = request.header("content-type", content_type);
            }
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        if status >= 500 && status != 503 && status != 507 {
            server_errors += 1;
        }
        if status != case.status {
            panic!(
                "case {:?}: expected {} {}, got {status}: {}",
                case.name,
                case.status,
                case.code,
                response.text().await.unwrap_or_default()
            );
        }
        let problem = expect_problem(response, case.status, case.code).await;
        leaks += problem_leaks(&problem).len() as u64;
        codes.insert(case.code);
        assert!(
            problem["status"].as_u64() < Some(500),
            "case {:?}",
            case.name
        );
    }
    let after = snapshot(&harness).await;
    CaseLine::new("G3", "malformed-bodies")
        .must_be_zero("5xx other than 503/507", server_errors, total)
        .must_be_zero("state changed", u64::from(after != before), 1)
        .record();
    CaseLine::new("G9", "error-hygiene")
        .figure("distinct codes", codes.len())
        .must_be_zero(
            "problems showing a trace, path, address or unknown code",
            leaks,
            total,
        )
        .record();
    assert_eq!(after, before, "a refused request changed state");
    harness.stop().await;
}

async fn produce_raw(harness: &Harness, body: Vec<u8>) -> reqwest::Response {
    harness
        .client
        .post(harness.url("/v1/topics/t/messages"))
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .expect("request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_size_limit_accepts_the_limit_and_refuses_one_more() {
    let harness = setup().await;
    let at_limit = json!({ "messages": [{ "value": "x".repeat(MAX_MESSAGE) }] });
    json_of(
        harness.post_json("/v1/topics/t/messages", &at_limit).await,
        200,
    )
    .await;
    let over = json!({ "messages": [{ "value": "x".repeat(MAX_MESSAGE + 1) }] });
    expect_problem(
        harness.post_json("/v1/topics/t/messages", &over).await,
        413,
        "message_too_large",
    )
    .await;
    json_of(produce_raw(&harness, vec![7; MAX_MESSAGE]).await, 200).await;
    expect_problem(
        produce_raw(&harness, vec![7; MAX_MESSAGE + 1]).await,
        413,
        "message_too_large",
    )
    .await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_limit_accepts_the_limit_and_refuses_one_more() {
    let harness = setup().await;
    let patch = json!({ "max_message_bytes": 1024 * 1024 });
    let response = harness
        .client
        .patch(harness.url("/v1/topics/t"))
        .json(&patch)
        .send()
        .await
        .expect("patch");
    json_of(response, 200).await;
    json_of(produce_raw(&harness, vec![7; MAX_BODY]).await, 200).await;
    let refused = produce_raw(&harness, vec![7; MAX_BODY + 1]).await;
    // The server refuses before reading the upload; it must say it closes the connection,
    // or the client's next request goes down a dead socket (a broken pipe, not a reply).
    assert_eq!(
        refused.headers().get("connection").map(|v| v.as_bytes()),
        Some(&b"close"[..])
    );
    expect_problem(refused, 413, "message_too_large").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_receipts_fail_one_by_one_with_receipt_invalid() {
    let harness = setup().await;
    let reply = harness.ack("t", "s", &["garbage".to_owned()]).await;
    assert_eq!(
        reply,
        json!({ "acked": 0, "failed": [{ "receipt": "garbage", "code": "receipt_invalid" }] })
    );
    harness.stop().await;
}
