//! Route-by-route authorization: every route × {no token, produce-only, consume-only, a grant
//! on another topic, admin} gets 403 exactly where the grant is missing and 401 without a
//! token. The expectations are written out here, independently of the policy table.

use gateway::config::EdgeRaw;
use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::common::{Harness, expect_problem, json_of};
use crate::support::edge_common::{token, with_secret};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    Produce,
    Consume,
    Admin,
    AnyGrant,
    Token,
}

const SUB: &str = "/v1/topics/orders.missing/subscriptions/s";

fn routes() -> Vec<(&'static str, String, Value, Needs)> {
    let sub = |tail: &str| format!("{SUB}/{tail}");
    vec![
        (
            "POST",
            "/v1/topics".into(),
            json!({"name": "orders.missing-create", "partitions": 0}),
            Needs::Admin,
        ),
        ("GET", "/v1/topics".into(), Value::Null, Needs::Token),
        (
            "GET",
            "/v1/stats/history?topic=orders.missing".into(),
            Value::Null,
            Needs::Consume,
        ),
        (
            "GET",
            "/v1/stats/top?by=backlog".into(),
            Value::Null,
            Needs::Token,
        ),
        (
            "GET",
            "/v1/topics/orders.missing".into(),
            Value::Null,
            Needs::AnyGrant,
        ),
        (
            "PATCH",
            "/v1/topics/orders.missing".into(),
            json!({}),
            Needs::Admin,
        ),
        (
            "DELETE",
            "/v1/topics/orders.missing".into(),
            Value::Null,
            Needs::Admin,
        ),
        (
            "POST",
            "/v1/topics/orders.missing/messages".into(),
            json!({"messages": [{"value": "x"}]}),
            Needs::Produce,
        ),
        (
            "GET",
            "/v1/topics/orders.missing/messages?key=k".into(),
            Value::Null,
            Needs::Consume,
        ),
        (
            "GET",
            "/v1/topics/orders.missing/messages/m1".into(),
            Value::Null,
            Needs::Consume,
        ),
        (
            "DELETE",
            "/v1/topics/orders.missing/messages/m1".into(),
            Value::Null,
            Needs::Produce,
        ),
        (
            "GET",
            "/v1/topics/orders.missing/partitions/0/messages".into(),
            Value::Null,
            Needs::Consume,
        ),
        (
            "POST",
            "/v1/topics/orders.missing/subscriptions".into(),
            json!({"name": "s"}),
            Needs::Admin,
        ),
        (
            "GET",
            "/v1/topics/orders.missing/subscriptions".into(),
            Value::Null,
            Needs::AnyGrant,
        ),
        ("GET", SUB.into(), Value::Null, Needs::AnyGrant),
        ("PATCH", SUB.into(), json!({}), Needs::Admin),
        ("DELETE", SUB.into(), Value::Null, Needs::Admin),
        (
            "POST",
            sub("receive"),
            json!({"wait_ms": 0}),
            Needs::Consume,
        ),
        (
            "POST",
            sub("ack"),
            json!({"receipts": ["r"]}),
            Needs::Consume,
        ),
        (
            "POST",
            sub("nack"),
            json!({"receipts": ["r"]}),
            Needs::Consume,
        ),
        (
            "POST",
            sub("extend"),
            json!({"receipts": ["r"], "ack_timeout_ms": 5000}),
            Needs::Consume,
        ),
        (
            "POST",
            sub("seek"),
            json!({"to": "earliest"}),
            Needs::Consume,
        ),
        ("GET", sub("stream"), Value::Null, Needs::Consume),
        ("POST", sub("redrive"), json!({}), Needs::Admin),
        ("GET", "/v1/cluster".into(), Value::Null, Needs::Token),
        ("GET", "/docs".into(), Value::Null, Needs::Token),
        ("GET", "/openapi.json".into(), Value::Null, Needs::Token),
    ]
}

/// Whether `scope` (grants on `orders.*` or `billing.*`) satisfies `needs` on `orders.missing`.
fn allowed(scope: &str, needs: Needs) -> bool {
    let on_orders = |action: &str| scope.contains(&format!("{action}:orders.*"));
    match needs {
        Needs::Token => true,
        Needs::AnyGrant => scope.contains(":orders.*"),
        Needs::Admin => on_orders("admin"),
        Needs::Produce => on_orders("produce") || on_orders("admin"),
        Needs::Consume => on_orders("consume") || on_orders("admin"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_needs_exactly_its_grant() {
    let harness = Harness::start_with(with_secret(EdgeRaw::default())).await;
    let principals = [
        ("no grant", Some("")),
        ("produce-only", Some("produce:orders.*")),
        ("consume-only", Some("consume:orders.*")),
        (
            "other topic",
            Some("admin:billing.* produce:billing.* consume:billing.*"),
        ),
        ("admin", Some("admin:orders.*")),
        ("no token", None),
    ];
    let mut checked = 0;
    let mut refusable = 0;
    let mut unauthorized_successes = 0;
    for (method, path, body, needs) in routes() {
        for (who, scope) in principals {
            let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
            let mut request = harness.client.request(method.clone(), harness.url(&path));
            if !body.is_null() {
                request = request.json(&body);
            }
            if let Some(scope) = scope {
                request = request.bearer_auth(token(&format!("svc-{who}"), scope));
            }
            let response = request.send().await.expect("request");
            let status = response.status().as_u16();
            let case = format!("{method} {path} as {who}");
            if !scope.is_some_and(|scope| allowed(scope, needs)) {
                refusable += 1;
                if status < 400 {
                    unauthorized_successes += 1;
                }
            }
            // A refusal before the body is read drains a small body: the connection stays
            // usable (no `connection: close`).
            assert_eq!(response.headers().get("connection"), None, "{case}");
            match scope {
                None => {
                    expect_problem(response, 401, "unauthorized").await;
                }
                Some(scope) if allowed(scope, needs) => {
                    let text = response.text().await.unwrap_or_default();
                    assert!(status != 401 && status != 403, "{case}: {status} {text}");
                    assert!(status < 500 || status == 503, "{case}: {status} {text}");
                }
                Some(_) => {
                    let problem = expect_problem(response, 403, "forbidden").await;
                    assert!(problem["detail"].is_string(), "{case}");
                }
            }
            checked += 1;
        }
    }
    CaseLine::new("G2", "authorization-matrix")
        .figure("requests", checked)
        .must_be_zero("unauthorized successes", unauthorized_successes, refusable)
        .record();
    assert!(checked >= 25 * 6);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_topics_and_created_topics_need_their_own_admin_grant() {
    let harness = Harness::start_with(with_secret(EdgeRaw::default())).await;
    let admin_orders = token("ops", "admin:orders.*");
    let create = |name: &str, token: &str| {
        harness
            .client
            .post(harness.url("/v1/topics"))
            .bearer_auth(token)
            .json(&json!({ "name": name }))
            .send()
    };
    expect_problem(
        create("billing.x", &admin_orders).await.expect("request"),
        403,
        "forbidden",
    )
    .await;
    json_of(
        create("orders.x", &admin_orders).await.expect("request"),
        201,
    )
    .await;
    let subscribe = harness
        .client
        .post(harness.url("/v1/topics/orders.x/subscriptions"))
        .bearer_auth(&admin_orders)
        .json(&json!({ "name": "s", "dead_letter_topic": "billing.dlq" }))
        .send()
        .await
        .expect("request");
    expect_problem(subscribe, 403, "forbidden").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_lists_show_only_topics_with_a_grant() {
    let harness = Harness::start_with(with_secret(EdgeRaw::default())).await;
    let root = token("root", "admin:*");
    for name in ["orders.a", "billing.b"] {
        let created = harness
            .client
            .post(harness.url("/v1/topics"))
            .bearer_auth(&root)
            .json(&json!({ "name": name }))
            .send()
            .await
            .expect("request");
        json_of(created, 201).await;
    }
    let names = |token: String| {
        let harness = &harness;
        async move {
            let list = harness
                .client
                .get(harness.url("/v1/topics"))
                .bearer_auth(token)
                .send()
                .await
                .expect("request");
            let list = json_of(list, 200).await;
            list["topics"]
                .as_array()
                .expect("topics")
                .iter()
                .map(|t| t["name"].as_str().expect("name").to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(names(token("p", "produce:orders.*")).await, ["orders.a"]);
    assert_eq!(names(root.clone()).await, ["billing.b", "orders.a"]);
    assert!(names(token("nobody", "")).await.is_empty());
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_exposure_is_configurable() {
    let public = Harness::start_with(with_secret(EdgeRaw {
        docs_public: Some("true".into()),
        ..EdgeRaw::default()
    }))
    .await;
    assert_eq!(public.get("/openapi.json").await.status(), 200);
    assert_eq!(public.get("/docs").await.status(), 200);
    expect_problem(public.get("/v1/topics").await, 401, "unauthorized").await;
    public.stop().await;
    let hidden = Harness::start_with(with_secret(EdgeRaw {
        expose_docs: Some("false".into()),
        ..EdgeRaw::default()
    }))
    .await;
    let root = token("root", "admin:*");
    for path in ["/openapi.json", "/docs"] {
        let response = hidden
            .client
            .get(hidden.url(path))
            .bearer_auth(&root)
            .send()
            .await
            .expect("request");
        expect_problem(response, 404, "route_not_found").await;
    }
    hidden.stop().await;
}
