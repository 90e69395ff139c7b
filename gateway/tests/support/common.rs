//! A real server on 127.0.0.1:0 over a temporary data folder, and helpers to talk to it.

use std::path::Path;
use std::time::Duration;

use gateway::RunningServer;
use gateway::config::RawSettings;
use reqwest::{Client, Response};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A running server, its data folder and an HTTP client.
pub struct Harness {
    /// The server.
    pub server: RunningServer,
    /// A client without a request timeout beyond the default.
    pub client: Client,
    /// The data folder when the harness made it (a restartable node keeps its own).
    _data: Option<TempDir>,
}

impl Harness {
    /// A server with default settings.
    pub async fn start() -> Harness {
        Harness::start_with(RawSettings::default()).await
    }

    /// A server with these settings (listen and data_dir are filled in).
    pub async fn start_with(raw: RawSettings) -> Harness {
        let data = tempfile::tempdir().expect("temp dir");
        let mut harness = Harness::start_in(data.path(), raw).await;
        harness._data = Some(data);
        harness
    }

    /// A server with these settings on `data_dir`, which outlives it.
    pub async fn start_in(data_dir: &Path, raw: RawSettings) -> Harness {
        let settings = RawSettings {
            listen: Some("127.0.0.1:0".into()),
            data_dir: Some(data_dir.to_owned()),
            ..raw
        }
        .freeze()
        .expect("valid settings");
        let server = RunningServer::start(settings).await.expect("server starts");
        let client = Client::builder()
            .timeout(Duration::from_secs(90))
            .build()
            .expect("client");
        let harness = Harness {
            server,
            client,
            _data: None,
        };
        harness.wait_until_ready().await;
        harness
    }

    async fn wait_until_ready(&self) {
        super::wait_ready(&self.client, &self.url(""), Duration::from_secs(20)).await;
    }

    /// Stops the server gracefully.
    pub async fn stop(self) {
        self.server.stop().await.expect("server stops cleanly");
    }

    /// The URL of a path on the server.
    pub fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    /// GET a path.
    pub async fn get(&self, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// POST a JSON body.
    pub async fn post_json(&self, path: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .expect("request")
    }

    /// POST a JSON body and return the reply's JSON, asserting the status.
    pub async fn post_ok(&self, path: &str, body: &Value, status: u16) -> Value {
        let response = self.post_json(path, body).await;
        json_of(response, status).await
    }

    /// POST a JSON body as `bearer`, asserting 200 or 201; the reply's JSON.
    pub async fn post_as(&self, bearer: &str, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(self.url(path))
            .bearer_auth(bearer)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        assert!(status == 200 || status == 201, "{path}: {status}");
        json_of(response, status).await
    }

    /// Creates a topic, asserting 201.
    pub async fn create_topic(&self, body: Value) -> Value {
        self.post_ok("/v1/topics", &body, 201).await
    }

    /// Creates a subscription, asserting 201.
    pub async fn create_subscription(&self, topic: &str, body: Value) -> Value {
        self.post_ok(&format!("/v1/topics/{topic}/subscriptions"), &body, 201)
            .await
    }

    /// Produces a JSON batch, asserting 200; returns the `messages` array.
    pub async fn produce(&self, topic: &str, messages: Vec<Value>) -> Vec<Value> {
        let reply = self
            .post_ok(
                &format!("/v1/topics/{topic}/messages"),
                &json!({ "messages": messages }),
                200,
            )
            .await;
        reply["messages"].as_array().expect("messages").clone()
    }

    /// Receives from a subscription, asserting 200; returns the `messages` array.
    pub async fn receive(&self, topic: &str, sub: &str, body: Value) -> Vec<Value> {
        let path = format!("/v1/topics/{topic}/subscriptions/{sub}/receive");
        let reply = self.post_ok(&path, &body, 200).await;
        reply["messages"].as_array().expect("messages").clone()
    }

    /// Acks receipts, asserting 200; returns the reply.
    pub async fn ack(&self, topic: &str, sub: &str, receipts: &[String]) -> Value {
        let path = format!("/v1/topics/{topic}/subscriptions/{sub}/ack");
        self.post_ok(&path, &json!({ "receipts": receipts }), 200)
            .await
    }
}

/// Asserts the status and parses the JSON body.
pub async fn json_of(response: Response, status: u16) -> Value {
    let actual = response.status().as_u16();
    let text = response.text().await.expect("body");
    assert_eq!(actual, status, "unexpected status; body: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Asserts a problem+json reply with this status and code; returns the problem.
pub async fn expect_problem(response: Response, status: u16, code: &str) -> Value {
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let problem = json_of(response, status).await;
    assert_eq!(content_type, "application/problem+json", "{problem}");
    assert_eq!(problem["status"], status, "{problem}");
    assert_eq!(problem["code"], code, "{problem}");
    assert!(
        problem["type"].is_string() && problem["title"].is_string(),
        "{problem}"
    );
    assert!(
        !problem["detail"].as_str().unwrap_or_default().is_empty(),
        "{problem}"
    );
    let leaks = problem_leaks(&problem);
    assert!(leaks.is_empty(), "{problem} shows {leaks:?}");
    problem
}

/// What a problem body must not show (RELIABILITY.md G9): a code outside the documented list,
/// a stack trace or panic message, a file path, an internal address.
pub fn problem_leaks(problem: &Value) -> Vec<&'static str> {
    let mut leaks = Vec::new();
    let code = problem["code"].as_str().unwrap_or_default();
    if !gateway::http::codes::ALL
        .iter()
        .any(|known| known.code == code)
    {
        leaks.push("an unknown code");
    }
    let text = problem.to_string();
    let patterns = [
        ("panicked", "a panic message"),
        ("stack backtrace", "a stack trace"),
        (".rs:", "a source location"),
        ("/tmp/", "a file path"),
        ("/home/", "a file path"),
        ("/work/", "a file path"),
        ("wharf-data", "the data folder"),
        ("127.0.0.1:", "an internal address"),
        ("0.0.0.0", "an internal address"),
    ];
    for (pattern, what) in patterns {
        if text.contains(pattern) {
            leaks.push(what);
        }
    }
    leaks
}

/// The receipt strings of received messages.
pub fn receipts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["receipt"].as_str().expect("receipt").to_owned())
        .collect()
}
