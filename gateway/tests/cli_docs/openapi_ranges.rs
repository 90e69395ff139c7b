//! The ranges the OpenAPI document states are the ranges the server enforces: each documented
//! bound is the validating code's constant, and a real server accepts a value at each bound and
//! refuses one past it with a 400 problem.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use broker_core::limits::{
    MAX_ACK_TIMEOUT_MS, MAX_BATCH_MESSAGES, MAX_ID_BYTES, MAX_INT32_SETTING, MAX_INT64_SETTING,
    MAX_KEY_BYTES, MAX_MAX_DELIVERIES, MAX_MESSAGE_BYTES_CEILING, MAX_NAME_LEN, MAX_PARTITIONS,
    MAX_READ_RECORDS, MAX_RECEIPTS, MAX_RECEIVE_MESSAGES, MAX_TAG_LEN, MAX_TAGS, MAX_WAIT_MS,
    MIN_ACK_TIMEOUT_MS,
};
use broker_core::subscription::attempts::{MAX_ATTEMPT_ID_LEN, valid_attempt_id};
use broker_core::subscription::config::{MAX_BACKOFF_CEILING_MS, valid_tag};
use broker_core::topic::{MAX_DEDUP_WINDOW_MS, MIN_RETENTION_MS};
use gateway::routes::stream::{MAX_HEARTBEAT_MS, MAX_MAX_IN_FLIGHT, MIN_HEARTBEAT_MS};
use regex::Regex;
use reqwest::Response;
use serde_json::{Value, json};

use crate::document;
use crate::support::common::{Harness, expect_problem};

/// The schema of a component's property.
fn property<'a>(document: &'a Value, schema: &str, field: &str) -> &'a Value {
    let found = &document["components"]["schemas"][schema]["properties"][field];
    assert!(found.is_object(), "no property {schema}.{field}");
    found
}

/// The schema of an operation's parameter.
fn parameter<'a>(document: &'a Value, method: &str, path: &str, name: &str) -> &'a Value {
    document["paths"][path][method]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("{method} {path} has no parameters"))
        .iter()
        .find(|parameter| parameter["name"] == name)
        .map(|parameter| &parameter["schema"])
        .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
}

/// A keyword's number, if the schema has it.
fn number(schema: &Value, keyword: &str) -> Option<f64> {
    schema.get(keyword).map(|value| {
        value
            .as_f64()
            .unwrap_or_else(|| panic!("{keyword} is not a number in {schema}"))
    })
}

/// A keyword's whole number, if the schema has it.
fn whole(schema: &Value, keyword: &str) -> Option<u64> {
    schema.get(keyword).map(|value| {
        value
            .as_u64()
            .unwrap_or_else(|| panic!("{keyword} is not a whole number in {schema}"))
    })
}

fn assert_keyword(label: &str, schema: &Value, keyword: &str, expected: Option<u64>) {
    assert_eq!(
        whole(schema, keyword),
        expected,
        "{label}: documented {keyword} differs from the code's bound; schema {schema}"
    );
}

fn assert_range(label: &str, schema: &Value, min: u64, max: Option<u64>) {
    assert_keyword(label, schema, "minimum", Some(min));
    assert_keyword(label, schema, "maximum", max);
}

fn assert_length(label: &str, schema: &Value, max: usize) {
    assert_keyword(label, schema, "minLength", Some(1));
    assert_keyword(label, schema, "maxLength", Some(max as u64));
}

fn as_u64(value: usize) -> u64 {
    u64::try_from(value).expect("fits")
}

#[test]
fn documented_numeric_bounds_are_the_validating_code_constants() {
    let d = document();
    let topic = |field| property(&d, "CreateTopicRequest", field);
    let patch = |field| property(&d, "PatchTopicRequest", field);
    let sub = |field| property(&d, "CreateSubscriptionRequest", field);
    let retry = |field| property(&d, "RetryRequest", field);
    let receive = |field| property(&d, "ReceiveBody", field);
    let stream = |name| {
        parameter(
            &d,
            "get",
            "/v1/topics/{topic}/subscriptions/{sub}/stream",
            name,
        )
    };
    let read = |name| {
        parameter(
            &d,
            "get",
            "/v1/topics/{topic}/partitions/{partition}/messages",
            name,
        )
    };
    let produce = |name| parameter(&d, "post", "/v1/topics/{topic}/messages", name);
    let max_message_bytes = as_u64(MAX_MESSAGE_BYTES_CEILING);
    let ranges: Vec<(&str, &Value, u64, Option<u64>)> = vec![
        (
            "partitions",
            topic("partitions"),
            1,
            Some(MAX_PARTITIONS.into()),
        ),
        (
            "retention_ms",
            topic("retention_ms"),
            MIN_RETENTION_MS,
            Some(MAX_INT64_SETTING),
        ),
        (
            "retention_bytes",
            topic("retention_bytes"),
            1,
            Some(MAX_INT64_SETTING),
        ),
        (
            "max_message_bytes",
            topic("max_message_bytes"),
            1,
            Some(max_message_bytes),
        ),
        (
            "replication_factor",
            topic("replication_factor"),
            1,
            Some(1),
        ),
        (
            "dedup_window_ms",
            topic("dedup_window_ms"),
            0,
            Some(MAX_DEDUP_WINDOW_MS),
        ),
        (
            "patch retention_ms",
            patch("retention_ms"),
            MIN_RETENTION_MS,
            Some(MAX_INT64_SETTING),
        ),
        (
            "patch retention_bytes",
            patch("retention_bytes"),
            1,
            Some(MAX_INT64_SETTING),
        ),
        (
            "patch max_message_bytes",
            patch("max_message_bytes"),
            1,
            Some(max_message_bytes),
        ),
        (
            "patch dedup_window_ms",
            patch("dedup_window_ms"),
            0,
            Some(MAX_DEDUP_WINDOW_MS),
        ),
        (
            "rate messages_per_second",
            property(&d, "RateLimitBody", "messages_per_second"),
            1,
            Some(MAX_INT32_SETTING.into()),
        ),
        (
            "rate bytes_per_second",
            property(&d, "RateLimitBody", "bytes_per_second"),
            1,
            Some(MAX_INT64_SETTING),
        ),
        (
            "subscription ack_timeout_ms",
            sub("ack_timeout_ms"),
            MIN_ACK_TIMEOUT_MS,
            Some(MAX_ACK_TIMEOUT_MS),
        ),
        (
            "max_deliveries",
            sub("max_deliveries"),
            1,
            Some(MAX_MAX_DELIVERIES.into()),
        ),
        (
            "initial_backoff_ms",
            retry("initial_backoff_ms"),
            0,
            Some(MAX_BACKOFF_CEILING_MS),
        ),
        (
            "max_backoff_ms",
            retry("max_backoff_ms"),
            0,
            Some(MAX_BACKOFF_CEILING_MS),
        ),
        (
            "receive max_messages",
            receive("max_messages"),
            1,
            Some(as_u64(MAX_RECEIVE_MESSAGES)),
        ),
        ("receive wait_ms", receive("wait_ms"), 0, Some(MAX_WAIT_MS)),
        (
            "receive ack_timeout_ms",
            receive("ack_timeout_ms"),
            MIN_ACK_TIMEOUT_MS,
            Some(MAX_ACK_TIMEOUT_MS),
        ),
        (
            "extend ack_timeout_ms",
            property(&d, "ExtendRequest", "ack_timeout_ms"),
            MIN_ACK_TIMEOUT_MS,
            Some(MAX_ACK_TIMEOUT_MS),
        ),
        (
            "nack delay_ms",
            property(&d, "NackRequest", "delay_ms"),
            0,
            Some(broker_core::broker::MAX_NACK_DELAY_MS),
        ),
        (
            "stream max_in_flight",
            stream("max_in_flight"),
            1,
            Some(as_u64(MAX_MAX_IN_FLIGHT)),
        ),
        (
            "stream ack_timeout_ms",
            stream("ack_timeout_ms"),
            MIN_ACK_TIMEOUT_MS,
            Some(MAX_ACK_TIMEOUT_MS),
        ),
        (
            "stream heartbeat_ms",
            stream("heartbeat_ms"),
            MIN_HEARTBEAT_MS,
            Some(MAX_HEARTBEAT_MS),
        ),
        ("read max", read("max"), 1, Some(as_u64(MAX_READ_RECORDS))),
        ("read wait_ms", read("wait_ms"), 0, Some(MAX_WAIT_MS)),
        (
            "produce delay_ms",
            property(&d, "ProduceMessage", "delay_ms"),
            0,
            Some(broker_core::config::DEFAULT_MAX_DELAY_MS),
        ),
        (
            "raw produce delay_ms",
            produce("delay_ms"),
            0,
            Some(broker_core::config::DEFAULT_MAX_DELAY_MS),
        ),
        (
            "redrive max_messages",
            property(&d, "RedriveRequest", "max_messages"),
            1,
            Some(MAX_INT64_SETTING),
        ),
        (
            "redrive messages_per_second",
            property(&d, "RedriveRequest", "messages_per_second"),
            1,
            Some(MAX_INT32_SETTING.into()),
        ),
    ];
    for (label, schema, min, max) in ranges {
        assert_range(label, schema, min, max);
    }
    // The multiplier's bounds are literals in RetryPolicy::validate: `1.0..=10.0`.
    let multiplier = retry("multiplier");
    assert_eq!(number(multiplier, "minimum"), Some(1.0), "{multiplier}");
    assert_eq!(number(multiplier, "maximum"), Some(10.0), "{multiplier}");

    let items: Vec<(&str, &Value, Option<usize>, usize)> = vec![
        (
            "produce messages",
            property(&d, "ProduceRequest", "messages"),
            Some(1),
            MAX_BATCH_MESSAGES,
        ),
        (
            "produce tags",
            property(&d, "ProduceMessage", "tags"),
            None,
            MAX_TAGS,
        ),
        (
            "filter tags",
            property(&d, "FilterBody", "tags"),
            None,
            MAX_TAGS,
        ),
        (
            "ack receipts",
            property(&d, "AckRequest", "receipts"),
            Some(1),
            MAX_RECEIPTS,
        ),
        (
            "nack receipts",
            property(&d, "NackRequest", "receipts"),
            Some(1),
            MAX_RECEIPTS,
        ),
        (
            "extend receipts",
            property(&d, "ExtendRequest", "receipts"),
            Some(1),
            MAX_RECEIPTS,
        ),
    ];
    for (label, schema, min, max) in items {
        assert_keyword(label, schema, "minItems", min.map(as_u64));
        assert_keyword(label, schema, "maxItems", Some(as_u64(max)));
    }

    let lengths: Vec<(&str, &Value, usize)> = vec![
        ("topic name", topic("name"), MAX_NAME_LEN),
        ("subscription name", sub("name"), MAX_NAME_LEN),
        ("dead_letter_topic", sub("dead_letter_topic"), MAX_NAME_LEN),
        (
            "produce tag",
            &property(&d, "ProduceMessage", "tags")["items"],
            MAX_TAG_LEN,
        ),
        (
            "filter tag",
            &property(&d, "FilterBody", "tags")["items"],
            MAX_TAG_LEN,
        ),
        (
            "produce id",
            property(&d, "ProduceMessage", "id"),
            MAX_ID_BYTES,
        ),
        (
            "produce key",
            property(&d, "ProduceMessage", "key"),
            MAX_KEY_BYTES,
        ),
        ("raw produce key", produce("key"), MAX_KEY_BYTES),
        ("Idempotency-Key", produce("Idempotency-Key"), MAX_ID_BYTES),
        (
            "cancel id",
            parameter(&d, "delete", "/v1/topics/{topic}/messages/{id}", "id"),
            MAX_ID_BYTES,
        ),
        ("attempt_id", receive("attempt_id"), MAX_ATTEMPT_ID_LEN),
    ];
    for (label, schema, max) in lengths {
        assert_length(label, schema, max);
    }
}

#[test]
fn the_openapi_json_answer_is_documented_as_an_object() {
    let d = document();
    let schema = &d["paths"]["/openapi.json"]["get"]["responses"]["200"]["content"]["application/json"]
        ["schema"];
    assert_eq!(schema, &json!({"type": "object"}));
}

/// Whether `text` matches a schema's `pattern` (compiled), `minLength` and `maxLength`.
fn schema_accepts(schema: &Value, pattern: &Regex, text: &str) -> bool {
    let length = as_u64(text.chars().count());
    pattern.is_match(text)
        && whole(schema, "minLength").is_none_or(|min| length >= min)
        && whole(schema, "maxLength").is_none_or(|max| length <= max)
}

/// Every string of one or two printable ASCII characters (and a tab or a non-ASCII letter),
/// every three-character string over the characters that the name rules single out, and
/// strings around the length limits.
fn candidates() -> Vec<String> {
    let alphabet: Vec<char> = (' '..='~').chain(['é', '\t']).collect();
    let mut found = vec![String::new()];
    for a in &alphabet {
        found.push(a.to_string());
        for b in &alphabet {
            found.push(format!("{a}{b}"));
        }
    }
    let special = ['.', '_', '-', 'a', '/', ':', ' '];
    for a in special {
        for b in special {
            for c in special {
                found.push(format!("{a}{b}{c}"));
            }
        }
    }
    for length in [127, 128, 129, 199, 200, 201, 4096, 4097] {
        found.push("a".repeat(length));
        found.push(format!("_{}", "a".repeat(length - 1)));
        found.push(format!("..{}", "a".repeat(length - 2)));
    }
    found
}

fn assert_pattern_is_the_check(label: &str, schema: &Value, check: impl Fn(&str) -> bool) {
    let pattern = Regex::new(schema["pattern"].as_str().expect("a pattern")).expect("a regex");
    for text in candidates() {
        assert_eq!(
            schema_accepts(schema, &pattern, &text),
            check(&text),
            "{label}: the schema and the server disagree on {text:?}; schema {schema}"
        );
    }
}

#[test]
fn documented_string_patterns_accept_exactly_what_the_server_accepts() {
    let d = document();
    let name = |text: &str| broker_core::names::validate("name", text).is_ok();
    for (schema, field) in [
        ("CreateTopicRequest", "name"),
        ("CreateSubscriptionRequest", "name"),
        ("CreateSubscriptionRequest", "dead_letter_topic"),
    ] {
        assert_pattern_is_the_check(field, property(&d, schema, field), name);
    }
    for schema in ["ProduceMessage", "FilterBody"] {
        assert_pattern_is_the_check("tag", &property(&d, schema, "tags")["items"], valid_tag);
    }
    let id = broker_core::broker::valid_id;
    assert_pattern_is_the_check("id", property(&d, "ProduceMessage", "id"), id);
    let produce = "/v1/topics/{topic}/messages";
    assert_pattern_is_the_check(
        "Idempotency-Key",
        parameter(&d, "post", produce, "Idempotency-Key"),
        id,
    );
    assert_pattern_is_the_check(
        "cancel id",
        parameter(&d, "delete", "/v1/topics/{topic}/messages/{id}", "id"),
        id,
    );
    assert_pattern_is_the_check(
        "attempt_id",
        property(&d, "ReceiveBody", "attempt_id"),
        valid_attempt_id,
    );
}

// ---- Against a real server ----

/// A reply, or a request's result.
trait Answer {
    fn answer(self) -> Response;
}

impl Answer for Response {
    fn answer(self) -> Response {
        self
    }
}

impl Answer for reqwest::Result<Response> {
    fn answer(self) -> Response {
        self.expect("request")
    }
}

/// Asserts a value the schema allows was taken: any 2xx. The body is read only on a refusal
/// (a stream's never ends); dropping the reply closes its connection.
async fn assert_accepted(label: &str, value: &Value, response: Response) {
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        panic!(
            "{label} = {value} lies within the documented range but was refused: {status} {body}"
        );
    }
}

/// Asserts a value the schema forbids was refused with a 400 problem.
async fn assert_refused(label: &str, value: &Value, response: Response) {
    let status = response.status().as_u16();
    assert_eq!(
        status, 400,
        "{label} = {value} lies outside the documented range but got {status}"
    );
    expect_problem(response, 400, "invalid_request").await;
}

/// Sends the documented bounds of a numeric field and one past each.
async fn probe_range<F, Fut>(label: &str, schema: &Value, send: F)
where
    F: Fn(Value) -> Fut,
    Fut: Future<Output: Answer>,
{
    let float = schema["type"] == "number" || schema["type"][0] == "number";
    let (inside, outside): (Vec<Value>, Vec<Value>) = if float {
        let min = number(schema, "minimum").expect("minimum");
        let max = number(schema, "maximum").expect("maximum");
        (
            vec![json!(min), json!(max)],
            vec![json!(min - 0.001), json!(max + 0.001)],
        )
    } else {
        let min = whole(schema, "minimum").unwrap_or_else(|| panic!("{label}: no minimum"));
        let max = whole(schema, "maximum");
        let mut inside = vec![json!(min)];
        let mut outside = Vec::new();
        if min > 0 {
            outside.push(json!(min - 1));
        }
        if let Some(max) = max {
            inside.push(json!(max));
            outside.push(json!(max + 1));
        }
        (inside, outside)
    };
    for value in inside {
        assert_accepted(label, &value, send(value.clone()).await.answer()).await;
    }
    for value in outside {
        assert_refused(label, &value, send(value.clone()).await.answer()).await;
    }
}

/// Sends strings (or lists) of the documented least and greatest length, and one past each;
/// `build` makes the value of a given length.
async fn probe_length<B, F, Fut>(
    label: &str,
    schema: &Value,
    keywords: [&str; 2],
    build: B,
    send: F,
) where
    B: Fn(usize) -> Value,
    F: Fn(Value) -> Fut,
    Fut: Future<Output: Answer>,
{
    let min = whole(schema, keywords[0]).map(|min| usize::try_from(min).expect("fits"));
    let max = whole(schema, keywords[1]).unwrap_or_else(|| panic!("{label}: no {}", keywords[1]));
    let max = usize::try_from(max).expect("fits");
    let mut inside = vec![max];
    let mut outside = vec![max + 1];
    if let Some(min) = min {
        inside.push(min);
        if min > 0 {
            outside.push(min - 1);
        }
    }
    for length in inside {
        let value = build(length);
        assert_accepted(
            &format!("{label} of {length}"),
            &value,
            send(value.clone()).await.answer(),
        )
        .await;
    }
    for length in outside {
        let value = build(length);
        assert_refused(
            &format!("{label} of {length}"),
            &value,
            send(value.clone()).await.answer(),
        )
        .await;
    }
}

fn text(length: usize) -> Value {
    json!("a".repeat(length))
}

/// `length` distinct strings of `a`s and digits.
fn list(length: usize) -> Value {
    json!((0..length).map(|i| format!("a{i}")).collect::<Vec<_>>())
}

/// Every documented range probed against a real server, at both bounds and one past each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_server_enforces_exactly_the_documented_ranges() {
    let d = document();
    let harness = Harness::start().await;
    let h = &harness;
    let unique = AtomicUsize::new(0);
    let next = || unique.fetch_add(1, Ordering::Relaxed);
    h.create_topic(json!({"name": "t"})).await;
    h.create_subscription("t", json!({"name": "s"})).await;
    h.produce("t", vec![json!({"value": "v"})]).await;
    let send = |method: reqwest::Method, path: String, body: Value| async move {
        h.client
            .request(method, h.url(&path))
            .json(&body)
            .send()
            .await
            .expect("request")
    };
    let post = |path: &str, body: Value| send(reqwest::Method::POST, path.to_owned(), body);
    let get = |path: String| async move { h.get(&path).await };

    // Topics: create with one field set, on a new topic each time.
    let create_topic = |extra: Value| {
        let mut body = json!({"name": format!("topic-{}", next())});
        let extra = extra.as_object().expect("object").clone();
        body.as_object_mut().expect("object").extend(extra);
        post("/v1/topics", body)
    };
    for field in [
        "partitions",
        "retention_ms",
        "retention_bytes",
        "max_message_bytes",
        "replication_factor",
        "dedup_window_ms",
    ] {
        let schema = property(&d, "CreateTopicRequest", field);
        probe_range(field, schema, |v| create_topic(json!({ field: v }))).await;
    }
    for field in ["messages_per_second", "bytes_per_second"] {
        let schema = property(&d, "RateLimitBody", field);
        probe_range(field, schema, |v| {
            create_topic(json!({"rate_limit": { field: v }}))
        })
        .await;
    }
    let schema = property(&d, "CreateTopicRequest", "name");
    probe_length("topic name", schema, LENGTH, text, |v| {
        post("/v1/topics", json!({"name": v}))
    })
    .await;
    h.create_topic(json!({"name": "patched"})).await;
    for field in [
        "retention_ms",
        "retention_bytes",
        "max_message_bytes",
        "dedup_window_ms",
    ] {
        let schema = property(&d, "PatchTopicRequest", field);
        probe_range(field, schema, |v| {
            let path = "/v1/topics/patched".to_owned();
            send(reqwest::Method::PATCH, path, json!({ field: v }))
        })
        .await;
    }

    // Subscriptions on `t`, a new one each time (with a short dead-letter topic name, so a
    // long subscription name is not refused for the default one's length).
    let create_sub = |extra: Value| {
        let mut body = json!({"name": format!("sub-{}", next()), "dead_letter_topic": "dlq"});
        let extra = extra.as_object().expect("object").clone();
        body.as_object_mut().expect("object").extend(extra);
        post("/v1/topics/t/subscriptions", body)
    };
    for field in ["ack_timeout_ms", "max_deliveries"] {
        let schema = property(&d, "CreateSubscriptionRequest", field);
        probe_range(field, schema, |v| create_sub(json!({ field: v }))).await;
    }
    let retry = |field| property(&d, "RetryRequest", field);
    probe_range("retry.max_backoff_ms", retry("max_backoff_ms"), |v| {
        create_sub(json!({"retry": {"initial_backoff_ms": 0, "max_backoff_ms": v}}))
    })
    .await;
    probe_range(
        "retry.initial_backoff_ms",
        retry("initial_backoff_ms"),
        |v| {
            let ceiling = MAX_BACKOFF_CEILING_MS;
            create_sub(json!({"retry": {"initial_backoff_ms": v, "max_backoff_ms": ceiling}}))
        },
    )
    .await;
    probe_range("retry.multiplier", retry("multiplier"), |v| {
        create_sub(json!({"retry": {"multiplier": v}}))
    })
    .await;
    for field in ["name", "dead_letter_topic"] {
        let schema = property(&d, "CreateSubscriptionRequest", field);
        probe_length(field, schema, LENGTH, text, |v| {
            create_sub(json!({ field: v }))
        })
        .await;
    }
    let tags = property(&d, "FilterBody", "tags");
    probe_length("filter.tags", tags, ITEMS, list, |v| {
        create_sub(json!({"filter": {"tags": v}}))
    })
    .await;
    probe_length("a filter tag", &tags["items"], LENGTH, text, |v| {
        create_sub(json!({"filter": {"tags": [v]}}))
    })
    .await;

    // Produce, into `t`.
    let produce_one = |fields: Value| post("/v1/topics/t/messages", json!({"messages": [fields]}));
    let message = |field| property(&d, "ProduceMessage", field);
    probe_range("delay_ms", message("delay_ms"), |v| {
        produce_one(json!({"value": "v", "delay_ms": v}))
    })
    .await;
    probe_length(
        "messages",
        property(&d, "ProduceRequest", "messages"),
        ITEMS,
        |n| json!(vec![json!({"value": "v"}); n]),
        |v| post("/v1/topics/t/messages", json!({"messages": v})),
    )
    .await;
    // Ids are remembered for deduplication; each probe's id is new.
    let unique_text = |n: usize| {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let first = char::from(alphabet[next() % alphabet.len()]);
        json!(format!("{first}{}", "a".repeat(n.saturating_sub(1))).get(..n))
    };
    for field in ["id", "key"] {
        probe_length(field, message(field), LENGTH, unique_text, |v| {
            produce_one(json!({"value": "v", field: v}))
        })
        .await;
    }
    probe_length("tags", message("tags"), ITEMS, list, |v| {
        produce_one(json!({"value": "v", "tags": v}))
    })
    .await;
    probe_length("a tag", &message("tags")["items"], LENGTH, text, |v| {
        produce_one(json!({"value": "v", "tags": [v]}))
    })
    .await;
    let raw = "/v1/topics/{topic}/messages";
    probe_range("?delay_ms", parameter(&d, "post", raw, "delay_ms"), |v| {
        h.client
            .post(h.url(&format!("/v1/topics/t/messages?delay_ms={v}")))
            .body("v")
            .send()
    })
    .await;
    probe_length(
        "?key",
        parameter(&d, "post", raw, "key"),
        LENGTH,
        text,
        |v| {
            let key = v.as_str().unwrap_or_default().to_owned();
            h.client
                .post(h.url("/v1/topics/t/messages"))
                .query(&[("key", key)])
                .body("v")
                .send()
        },
    )
    .await;
    let header = parameter(&d, "post", raw, "Idempotency-Key");
    probe_length("Idempotency-Key", header, LENGTH, unique_text, |v| {
        let key = v.as_str().unwrap_or_default().to_owned();
        h.client
            .post(h.url("/v1/topics/t/messages"))
            .header("idempotency-key", key)
            .body("v")
            .send()
    })
    .await;
    // Cancelling: a delayed message of the id is produced first, so an id within the range
    // is answered 204.
    let cancel = parameter(&d, "delete", "/v1/topics/{topic}/messages/{id}", "id");
    probe_length(
        "cancel id",
        cancel,
        [NO_MIN, "maxLength"],
        unique_text,
        |v| async move {
            let id = v.as_str().unwrap_or_default().to_owned();
            if !id.is_empty() && id.len() <= MAX_ID_BYTES {
                let delayed = json!({"value": "v", "id": id, "delay_ms": 3_600_000});
                let path = "/v1/topics/t/messages";
                let produced = post(path, json!({"messages": [delayed]})).await;
                assert!(
                    produced.status().is_success(),
                    "a delayed message of id {id}"
                );
            }
            let path = format!("/v1/topics/t/messages/{id}");
            send(reqwest::Method::DELETE, path, Value::Null).await
        },
    )
    .await;

    // Receive, settle and redrive on `t`/`s`.
    let base = "/v1/topics/t/subscriptions/s";
    let receive = |fields: Value| post(&format!("{base}/receive"), fields);
    let body = |field| property(&d, "ReceiveBody", field);
    probe_range("max_messages", body("max_messages"), |v| {
        receive(json!({"max_messages": v, "wait_ms": 0}))
    })
    .await;
    probe_range("ack_timeout_ms", body("ack_timeout_ms"), |v| {
        receive(json!({"ack_timeout_ms": v, "wait_ms": 0}))
    })
    .await;
    probe_length("attempt_id", body("attempt_id"), LENGTH, unique_text, |v| {
        receive(json!({"attempt_id": v, "wait_ms": 0}))
    })
    .await;
    // A message is waiting whenever a receive may wait, so the longest wait returns at once.
    probe_range("wait_ms", body("wait_ms"), |v| async move {
        h.produce("t", vec![json!({"value": "v"})]).await;
        receive(json!({"wait_ms": v, "max_messages": 1})).await
    })
    .await;
    for action in ["ack", "nack", "extend"] {
        let schema = property(&d, &format!("{}Request", capitalized(action)), "receipts");
        probe_length(action, schema, ITEMS, list, |v| {
            let extend = (action == "extend").then_some(MIN_ACK_TIMEOUT_MS);
            let mut request = json!({"receipts": v});
            if let Some(ms) = extend {
                request["ack_timeout_ms"] = json!(ms);
            }
            post(&format!("{base}/{action}"), request)
        })
        .await;
    }
    probe_range(
        "nack delay_ms",
        property(&d, "NackRequest", "delay_ms"),
        |v| {
            post(
                &format!("{base}/nack"),
                json!({"receipts": ["r"], "delay_ms": v}),
            )
        },
    )
    .await;
    let extend = property(&d, "ExtendRequest", "ack_timeout_ms");
    probe_range("extend ack_timeout_ms", extend, |v| {
        post(
            &format!("{base}/extend"),
            json!({"receipts": ["r"], "ack_timeout_ms": v}),
        )
    })
    .await;
    for field in ["max_messages", "messages_per_second"] {
        let schema = property(&d, "RedriveRequest", field);
        probe_range(field, schema, |v| {
            post(&format!("{base}/redrive"), json!({ field: v }))
        })
        .await;
    }

    // Query parameters: the offset read (a record is stored, so no read waits) and the stream
    // (closed as soon as it answers; a short heartbeat lets the server see it go).
    let read = "/v1/topics/{topic}/partitions/{partition}/messages";
    for name in ["max", "wait_ms"] {
        probe_range(name, parameter(&d, "get", read, name), |v| {
            get(format!("/v1/topics/t/partitions/0/messages?{name}={v}"))
        })
        .await;
    }
    let stream = "/v1/topics/{topic}/subscriptions/{sub}/stream";
    for name in ["max_in_flight", "ack_timeout_ms", "heartbeat_ms"] {
        probe_range(name, parameter(&d, "get", stream, name), |v| {
            let heartbeat = if name == "heartbeat_ms" {
                String::new()
            } else {
                "&heartbeat_ms=100".to_owned()
            };
            get(format!("{base}/stream?{name}={v}{heartbeat}"))
        })
        .await;
    }

    harness.stop().await;
}

/// Keywords of a string's length.
const LENGTH: [&str; 2] = ["minLength", "maxLength"];
/// Keywords of a list's length.
const ITEMS: [&str; 2] = ["minItems", "maxItems"];
/// A keyword no schema has: the least length is not probed (an empty path segment is not a
/// route).
const NO_MIN: &str = "x-no-minimum";

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
