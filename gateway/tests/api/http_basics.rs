//! Cross-cutting HTTP behavior: request ids, unknown routes and methods, probes.

use crate::support::common::{Harness, expect_problem, json_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_id_is_echoed_or_generated_on_every_response() {
    let harness = Harness::start().await;
    let echoed = harness
        .client
        .get(harness.url("/healthz"))
        .header("x-request-id", "client-chosen-42")
        .send()
        .await
        .expect("request");
    assert_eq!(echoed.headers()["x-request-id"], "client-chosen-42");
    let generated = harness.get("/v1/topics/missing").await;
    let id = generated.headers()["x-request-id"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(!id.is_empty());
    expect_problem(generated, 404, "topic_not_found").await;
    let unknown = harness.get("/nowhere").await;
    assert!(unknown.headers().contains_key("x-request-id"));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_get_problem_json() {
    let harness = Harness::start().await;
    expect_problem(harness.get("/nowhere").await, 404, "route_not_found").await;
    expect_problem(
        harness.get("/v1/topics/t/nothing/here").await,
        404,
        "route_not_found",
    )
    .await;
    let delete_all = harness
        .client
        .delete(harness.url("/v1/topics"))
        .send()
        .await
        .expect("request");
    expect_problem(delete_all, 405, "method_not_allowed").await;
    let get_receive = harness.get("/v1/topics/t/subscriptions/s/receive").await;
    expect_problem(get_receive, 405, "method_not_allowed").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_answer_while_serving() {
    let harness = Harness::start().await;
    assert_eq!(
        json_of(harness.get("/healthz").await, 200).await["status"],
        "ok"
    );
    assert_eq!(
        json_of(harness.get("/readyz").await, 200).await["status"],
        "ready"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_a_pending_long_poll_promptly() {
    let harness = Harness::start().await;
    harness
        .create_topic(serde_json::json!({ "name": "t" }))
        .await;
    harness
        .create_subscription("t", serde_json::json!({ "name": "s" }))
        .await;
    let client = harness.client.clone();
    let url = harness.url("/v1/topics/t/subscriptions/s/receive");
    let poll = tokio::spawn(async move {
        client
            .post(url)
            .json(&serde_json::json!({ "wait_ms": 60000 }))
            .send()
            .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    harness.stop().await;
    let elapsed = started.elapsed();
    let response = poll
        .await
        .expect("task")
        .expect("the long-poll got a reply");
    assert_eq!(
        json_of(response, 200).await["messages"],
        serde_json::json!([])
    );
    assert!(
        elapsed < std::time::Duration::from_secs(30),
        "shutdown took {elapsed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_shows_itself_as_a_cluster_of_one() {
    let harness = Harness::start().await;
    let view = json_of(harness.get("/v1/cluster").await, 200).await;
    assert_eq!(view["mode"], "single");
    assert_eq!(view["nodes"].as_array().map(Vec::len), Some(0));
    assert!(view["controller"].is_null());
    harness.stop().await;
}

/// 409 `not_clustered`, not 400: the requests are well formed (schemathesis' valid data was
/// refused as bad input); the node's state refuses them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_refuses_every_cluster_admin_route_and_changes_nothing() {
    let harness = Harness::start().await;
    harness
        .create_topic(serde_json::json!({"name": "orders"}))
        .await;
    let before = json_of(harness.get("/v1/cluster").await, 200).await;
    let move_leader = harness
        .post_json(
            "/v1/cluster/partitions/orders/0/leader",
            &serde_json::json!({"node": 1}),
        )
        .await;
    let problem = expect_problem(move_leader, 409, "not_clustered").await;
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not part of a cluster")),
        "{problem}"
    );
    let rebalance = harness
        .post_json("/v1/cluster/rebalance", &serde_json::json!({}))
        .await;
    expect_problem(rebalance, 409, "not_clustered").await;
    let drain = harness
        .client
        .post(harness.url("/v1/cluster/nodes/1/drain"))
        .send()
        .await
        .expect("request");
    expect_problem(drain, 409, "not_clustered").await;
    let remove = harness
        .client
        .delete(harness.url("/v1/cluster/nodes/1"))
        .send()
        .await
        .expect("request");
    expect_problem(remove, 409, "not_clustered").await;
    let after = json_of(harness.get("/v1/cluster").await, 200).await;
    assert_eq!(after, before);
    json_of(harness.get("/v1/topics/orders").await, 200).await;
    harness.stop().await;
}
