//! The OpenAPI document: checked in and current, version 3.1, and in step with the router.

use std::path::PathBuf;

use serde_json::Value;

use crate::document;
use crate::support::common::Harness;

fn checked_in_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../openapi/openapi.json")
}

fn operations(document: &Value) -> Vec<(String, String)> {
    let paths = document["paths"].as_object().expect("paths");
    let mut found = Vec::new();
    for (path, item) in paths {
        for method in [
            "get", "post", "put", "patch", "delete", "head", "options", "trace",
        ] {
            if item.get(method).is_some() {
                found.push((method.to_owned(), path.clone()));
            }
        }
    }
    found
}

#[test]
fn checked_in_openapi_is_current() {
    let path = checked_in_path();
    let generated = gateway::openapi::pretty_json();
    if std::env::var("WHARF_WRITE_OPENAPI").as_deref() == Ok("1") {
        std::fs::write(&path, generated).expect("write openapi/openapi.json");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "openapi/openapi.json is stale or missing; regenerate it with \
         `WHARF_WRITE_OPENAPI=1 cargo test -p gateway --test cli_docs openapi::checked_in` and \
         commit the result"
    );
}

#[test]
fn document_is_openapi_3_1_with_operations() {
    let document = document();
    let version = document["openapi"].as_str().expect("openapi version");
    assert!(version.starts_with("3.1"), "version {version}");
    assert!(operations(&document).len() >= 19);
}

fn collect_refs<'a>(value: &'a Value, refs: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                refs.push(target);
            }
            map.values().for_each(|v| collect_refs(v, refs));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, refs)),
        _ => {}
    }
}

#[test]
fn every_schema_reference_resolves() {
    let document = document();
    let mut refs = Vec::new();
    collect_refs(&document, &mut refs);
    assert!(!refs.is_empty());
    for target in refs {
        let pointer = target.strip_prefix('#').expect("a local reference");
        assert!(
            document.pointer(pointer).is_some(),
            "dangling reference {target}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_is_routed() {
    let harness = Harness::start().await;
    for (method, path) in operations(&document()) {
        let concrete = path
            .replace("{topic}", "t")
            .replace("{sub}", "s")
            .replace("{partition}", "0");
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let response = harness
            .client
            .request(method.clone(), harness.url(&concrete))
            .header("content-type", "application/json")
            .body(if method == reqwest::Method::GET {
                ""
            } else {
                "{}"
            })
            .send()
            .await
            .expect("request");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        let code = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|problem| problem["code"].as_str().map(str::to_owned))
            .unwrap_or_default();
        assert!(
            code != "route_not_found" && code != "method_not_allowed" && status.as_u16() != 405,
            "{method} {path} is documented but not routed: {status} {body}"
        );
        assert!(status.as_u16() < 500, "{method} {path}: {status} {body}");
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_document_is_the_generated_one() {
    let harness = Harness::start().await;
    let response = harness.get("/openapi.json").await;
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        response.text().await.expect("body"),
        gateway::openapi::pretty_json()
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_page_lists_every_path() {
    let harness = Harness::start().await;
    let response = harness.get("/docs").await;
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let page = response.text().await.expect("body");
    for (method, path) in operations(&document()) {
        let heading = format!("{}</span><code>{}</code>", method.to_uppercase(), path);
        assert!(
            page.contains(&heading),
            "/docs does not list {method} {path}"
        );
    }
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "/docs loads external assets"
    );
    harness.stop().await;
}

/// What client generators need (openapi-python-client skips a body without a schema and a
/// media type it cannot send; a typed error needs one error schema): every request body
/// media type has a schema, and every 4xx/5xx answer is `application/problem+json` with the
/// `Problem` schema.
#[test]
fn every_body_has_a_schema_and_every_error_is_a_problem() {
    let document = document();
    let mut errors = 0;
    for (method, path) in operations(&document) {
        let operation = &document["paths"][&path][&method];
        if let Some(content) = operation["requestBody"]["content"].as_object() {
            for (media, body) in content {
                assert!(
                    body.get("schema").is_some(),
                    "{method} {path}: request body {media} has no schema"
                );
            }
        }
        let responses = operation["responses"].as_object().expect("responses");
        for (status, response) in responses {
            if !status.starts_with('4') && !status.starts_with('5') {
                continue;
            }
            let content = response["content"].as_object().expect("error content");
            let media: Vec<&String> = content.keys().collect();
            assert_eq!(
                media,
                ["application/problem+json"],
                "{method} {path} {status}"
            );
            assert_eq!(
                content["application/problem+json"]["schema"]["$ref"],
                "#/components/schemas/Problem",
                "{method} {path} {status}"
            );
            errors += 1;
        }
    }
    assert!(errors > 100, "only {errors} error responses documented");
}

#[test]
fn cancel_documents_its_bad_id_answer_and_every_body_route_its_413() {
    let document = document();
    let cancel = &document["paths"]["/v1/topics/{topic}/messages/{id}"]["delete"]["responses"];
    assert!(cancel.get("400").is_some());
    for (method, path) in operations(&document) {
        let operation = &document["paths"][&path][&method];
        if operation.get("requestBody").is_some() {
            assert!(
                operation["responses"].get("413").is_some(),
                "{method} {path} takes a body but does not document 413"
            );
        }
    }
}

/// Path parameters of the operation whose `operationId` is `id`: `(path, names)`.
fn path_parameters_of(document: &Value, id: &str) -> Option<Vec<String>> {
    let paths = document["paths"].as_object()?;
    paths.iter().find_map(|(path, item)| {
        item.as_object()?
            .values()
            .find(|operation| operation["operationId"] == id)
            .map(|_| {
                path.split('{')
                    .skip(1)
                    .filter_map(|rest| rest.split('}').next())
                    .map(str::to_owned)
                    .collect()
            })
    })
}

/// The stateful phase of schemathesis (and any client following links) reaches the topic and
/// subscription operations with real resources only through these links: it found none from
/// `POST /v1/topics`, so its deletes only ever got 404. Each link names an existing operation
/// and gives every path parameter of it.
#[test]
fn creating_a_topic_or_subscription_links_to_the_operations_on_it() {
    let document = document();
    let mut targets = Vec::new();
    for path in ["/v1/topics", "/v1/topics/{topic}/subscriptions"] {
        let links = document["paths"][path]["post"]["responses"]["201"]["links"]
            .as_object()
            .unwrap_or_else(|| panic!("POST {path} 201 has no links"));
        for (name, link) in links {
            let id = link["operationId"].as_str().expect("operationId");
            let mut needed = path_parameters_of(&document, id)
                .unwrap_or_else(|| panic!("link {name} names unknown operation {id}"));
            let mut given: Vec<String> = link["parameters"]
                .as_object()
                .expect("parameters")
                .keys()
                .cloned()
                .collect();
            needed.sort();
            given.sort();
            assert_eq!(given, needed, "link {name} to {id}");
            targets.push(id.to_owned());
        }
    }
    for id in [
        "describe_topic",
        "delete_topic",
        "produce",
        "create_subscription",
        "delete_subscription",
        "receive",
        "seek",
    ] {
        assert!(targets.iter().any(|t| t == id), "no link to {id}");
    }
}
