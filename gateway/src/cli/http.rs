//! The HTTP side of the client commands: one [`Api`] per process, every call with a timeout,
//! 429 and 503 retried after their `Retry-After`, and problem+json turned into
//! [`CliError::Server`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cli::error::CliError;

/// The wait when a 429 or 503 carries no usable `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long connecting may take, at most: a server that does not accept within this is down.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// An idle pooled connection is dropped after this: under the server's keep-alive timeout
/// (`header_read_timeout_ms`, 10 s by default), so an ack sent after a slow stdout never goes
/// out on a connection the server is closing.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of a body that is not a problem document goes into an error line.
const BODY_EXCERPT_CHARS: usize = 200;

/// Where the server is and how to talk to it.
#[derive(Debug, Clone)]
pub(crate) struct ApiConfig {
    /// Base URL, e.g. `http://127.0.0.1:8080` (a path prefix is kept).
    pub url: String,
    /// Bearer token, when the server has auth on.
    pub token: Option<String>,
    /// Timeout of a call that does not long-poll.
    pub timeout: Duration,
    /// How long 429 and 503 answers are retried before they become the error.
    pub retry_for: Duration,
}

/// A client of one Wharf server.
#[derive(Debug)]
pub(crate) struct Api {
    base: Url,
    token: Option<String>,
    http: reqwest::Client,
    timeout: Duration,
    retry_for: Duration,
    retries: AtomicU64,
}

/// One request, kept whole so that it can be sent again.
#[derive(Debug)]
pub(crate) struct Call {
    method: Method,
    url: Url,
    body: Option<Bytes>,
    timeout: Option<Duration>,
}

impl Call {
    /// Sends this call with a longer timeout (a long-poll: its wait plus a margin).
    pub(crate) fn timeout(mut self, timeout: Duration) -> Call {
        self.timeout = Some(timeout);
        self
    }

    /// Adds query parameters.
    pub(crate) fn query(mut self, pairs: &[(&str, String)]) -> Call {
        self.url
            .query_pairs_mut()
            .extend_pairs(pairs.iter().map(|(name, value)| (*name, value.as_str())));
        self
    }
}

/// The fields of a problem document the CLI shows.
#[derive(Debug, serde::Deserialize)]
struct ProblemBody {
    code: Option<String>,
    title: Option<String>,
    detail: Option<String>,
}

impl Api {
    /// A client for `config`; a URL that does not parse or is not `http` is a usage error.
    pub(crate) fn new(config: &ApiConfig) -> Result<Api, CliError> {
        let bad_url = |reason| CliError::Usage {
            flag: "--url",
            value: config.url.clone(),
            reason,
        };
        let base =
            Url::parse(&config.url).map_err(|_| bad_url("expected e.g. http://host:8080"))?;
        if base.scheme() != "http" || base.cannot_be_a_base() {
            return Err(bad_url("only http:// URLs (Wharf serves plain HTTP/1.1)"));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(config.timeout))
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .user_agent(concat!("wharf-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| CliError::Unreachable {
                url: config.url.clone(),
                reason: error_chain(&error),
            })?;
        Ok(Api {
            base,
            token: config.token.clone().filter(|token| !token.is_empty()),
            http,
            timeout: config.timeout,
            retry_for: config.retry_for,
            retries: AtomicU64::new(0),
        })
    }

    /// How many 429/503 answers were retried so far.
    pub(crate) fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// A call without a body to the path made of `segments` (each percent-encoded).
    pub(crate) fn call(&self, method: Method, segments: &[&str]) -> Call {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        Call {
            method,
            url,
            body: None,
            timeout: None,
        }
    }

    /// A call with `body` as JSON.
    pub(crate) fn call_json(
        &self,
        method: Method,
        segments: &[&str],
        body: &impl Serialize,
    ) -> Result<Call, CliError> {
        let mut call = self.call(method, segments);
        let bytes = serde_json::to_vec(body).map_err(|error| CliError::Usage {
            flag: "request",
            value: error.to_string(),
            reason: "cannot be encoded as JSON",
        })?;
        call.body = Some(Bytes::from(bytes));
        Ok(call)
    }

    /// A call whose body is JSON already encoded.
    pub(crate) fn call_encoded(&self, method: Method, segments: &[&str], body: Bytes) -> Call {
        let mut call = self.call(method, segments);
        call.body = Some(body);
        call
    }

    /// Sends `call` and decodes a 2xx JSON answer.
    pub(crate) async fn json<T: DeserializeOwned>(&self, call: Call) -> Result<T, CliError> {
        let url = call.url.to_string();
        let body = self.send(call).await?;
        serde_json::from_slice(&body).map_err(|error| CliError::BadReply {
            url,
            reason: error.to_string(),
        })
    }

    /// Sends `call`, retrying 429 and 503 after `Retry-After` for up to `retry_for`, and
    /// returns the body of a 2xx answer.
    pub(crate) async fn send(&self, call: Call) -> Result<Bytes, CliError> {
        let give_up_at = Instant::now() + self.retry_for;
        loop {
            let response = self.send_once(&call).await?;
            let status = response.status();
            if status.is_success() {
                return response
                    .bytes()
                    .await
                    .map_err(|error| unreachable(&call, self.timeout, &error));
            }
            let wait = retry_after(status, response.headers());
            if let Some(wait) = wait.filter(|wait| Instant::now() + *wait <= give_up_at) {
                self.retries.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(wait).await;
                continue;
            }
            let body = response.bytes().await.unwrap_or_default();
            return Err(problem(status, &body));
        }
    }

    async fn send_once(&self, call: &Call) -> Result<reqwest::Response, CliError> {
        let mut request = self
            .http
            .request(call.method.clone(), call.url.clone())
            .timeout(call.timeout.unwrap_or(self.timeout));
        if let Some(token) = &self.token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(body) = &call.body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
        }
        request
            .send()
            .await
            .map_err(|error| unreachable(call, self.timeout, &error))
    }
}

/// The wait a 429 or 503 asks for; `None` for any other status.
fn retry_after(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let seconds = headers
        .get(RETRY_AFTER)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok());
    Some(seconds.map_or(DEFAULT_RETRY_AFTER, Duration::from_secs))
}

/// A non-2xx answer as an error: the problem's code and detail, or the status and the start
/// of the body.
fn problem(status: StatusCode, body: &[u8]) -> CliError {
    let parsed = serde_json::from_slice::<ProblemBody>(body).ok();
    let code = parsed
        .as_ref()
        .and_then(|problem| problem.code.clone())
        .unwrap_or_else(|| format!("http_{}", status.as_u16()));
    let detail = parsed
        .and_then(|problem| problem.detail.or(problem.title))
        .unwrap_or_else(|| excerpt(status, body));
    CliError::Server {
        status: status.as_u16(),
        code,
        detail,
    }
}

fn excerpt(status: StatusCode, body: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(body)
        .chars()
        .take(BODY_EXCERPT_CHARS)
        .collect();
    let text = text.trim();
    if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text.to_owned()
    }
}

fn unreachable(call: &Call, default_timeout: Duration, error: &reqwest::Error) -> CliError {
    let reason = if error.is_timeout() {
        let timeout = call.timeout.unwrap_or(default_timeout);
        format!("no answer within {timeout:?}")
    } else {
        error_chain(error)
    };
    CliError::Unreachable {
        url: call.url.to_string(),
        reason,
    }
}

/// An error's causes, innermost last, on one line (reqwest's own top line repeats the URL,
/// which the error line shows already).
fn error_chain(error: &dyn std::error::Error) -> String {
    let Some(first) = error.source() else {
        return error.to_string();
    };
    let mut text = first.to_string();
    let mut source = first.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_shows_its_code_and_detail() {
        let body = br#"{"type":"about:blank","title":"Topic not found","status":404,"detail":"no topic named x","code":"topic_not_found"}"#;
        let error = problem(StatusCode::NOT_FOUND, body);
        assert_eq!(error.to_string(), "topic_not_found: no topic named x");
        assert_eq!(error.exit_code(), crate::cli::error::EXIT_REFUSED);
    }

    #[test]
    fn a_body_that_is_not_a_problem_shows_the_status_and_its_start() {
        let error = problem(StatusCode::BAD_GATEWAY, b"upstream down");
        assert_eq!(error.to_string(), "http_502: upstream down");
        assert_eq!(error.exit_code(), crate::cli::error::EXIT_UNAVAILABLE);
        let error = problem(StatusCode::BAD_GATEWAY, b"");
        assert_eq!(error.to_string(), "http_502: Bad Gateway");
    }

    #[test]
    fn only_429_and_503_are_retried_and_retry_after_is_honoured() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "3".parse().expect("header value"));
        assert_eq!(
            retry_after(StatusCode::TOO_MANY_REQUESTS, &headers),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(StatusCode::SERVICE_UNAVAILABLE, &HeaderMap::new()),
            Some(DEFAULT_RETRY_AFTER)
        );
        assert_eq!(retry_after(StatusCode::BAD_REQUEST, &headers), None);
        assert_eq!(
            retry_after(StatusCode::INTERNAL_SERVER_ERROR, &headers),
            None
        );
    }
}
