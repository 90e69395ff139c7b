//! The web console over real HTTP: `/ui` and its files are served from the binary with their
//! content types and a strict content security policy, without a token even with auth on, and
//! an unknown file is a 404 problem.

use gateway::config::EdgeRaw;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, ORIGIN};

use crate::support::common::{Harness, expect_problem};
use crate::support::edge_common::with_secret;

/// What every console response must say about scripts: this origin only, nothing inline.
fn assert_strict_policy(response: &reqwest::Response) {
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .expect("ascii");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(policy.contains(directive), "{directive} missing: {policy}");
    }
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert_eq!(response.headers()[CACHE_CONTROL], "no-cache");
}

fn content_type(response: &reqwest::Response) -> &str {
    response.headers()[CONTENT_TYPE].to_str().expect("ascii")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_files_are_served_with_their_types_and_policy() {
    let harness = Harness::start().await;
    let page = harness.get("/ui").await;
    assert_eq!(page.status(), 200);
    assert_eq!(content_type(&page), "text/html; charset=utf-8");
    assert_strict_policy(&page);
    let html = page.text().await.expect("body");
    assert!(html.contains("src=\"/ui/console.js\""), "{html}");
    assert!(!html.contains("<script>"), "no inline script: {html}");
    for (path, expected) in [
        ("/ui/console.js", "text/javascript; charset=utf-8"),
        ("/ui/console.css", "text/css; charset=utf-8"),
        ("/ui/uPlot.iife.min.js", "text/javascript; charset=utf-8"),
        ("/ui/uPlot.min.css", "text/css; charset=utf-8"),
        ("/ui/index.html", "text/html; charset=utf-8"),
    ] {
        let response = harness.get(path).await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(content_type(&response), expected, "{path}");
        assert_strict_policy(&response);
        assert!(!response.bytes().await.expect("body").is_empty(), "{path}");
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_etag_gets_304_without_a_body() {
    let harness = Harness::start().await;
    let first = harness.get("/ui/console.js").await;
    let etag = first.headers()[ETAG].clone();
    let again = harness
        .client
        .get(harness.url("/ui/console.js"))
        .header(IF_NONE_MATCH, etag.clone())
        .send()
        .await
        .expect("request");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()[ETAG], etag);
    assert!(again.bytes().await.expect("body").is_empty());
    let stale = harness
        .client
        .get(harness.url("/ui/console.js"))
        .header(IF_NONE_MATCH, "\"stale\"")
        .send()
        .await
        .expect("request");
    assert_eq!(stale.status(), 200);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_file_is_a_404_problem() {
    let harness = Harness::start().await;
    for path in ["/ui/nothing.js", "/ui/..%2FCargo.toml", "/ui/INDEX.HTML"] {
        expect_problem(harness.get(path).await, 404, "asset_not_found").await;
    }
    // Deeper paths are no route at all.
    for path in ["/ui/vendor/uPlot.LICENSE", "/ui/console.js/more"] {
        expect_problem(harness.get(path).await, 404, "route_not_found").await;
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auth_on_the_console_needs_no_token_and_the_api_still_does() {
    let harness = Harness::start_with(with_secret(EdgeRaw::default())).await;
    for path in ["/ui", "/ui/console.js", "/ui/uPlot.iife.min.js"] {
        assert_eq!(harness.get(path).await.status(), 200, "{path}");
    }
    expect_problem(harness.get("/v1/topics").await, 401, "unauthorized").await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_guard_lets_the_console_load_from_its_own_origin_only() {
    let harness = Harness::start().await;
    let own = format!("http://{}", harness.server.address());
    let navigation = harness
        .client
        .get(harness.url("/ui"))
        .header("sec-fetch-site", "none")
        .send()
        .await
        .expect("request");
    assert_eq!(navigation.status(), 200);
    let same_origin = harness
        .client
        .get(harness.url("/ui/console.js"))
        .header("sec-fetch-site", "same-origin")
        .header(ORIGIN, own)
        .send()
        .await
        .expect("request");
    assert_eq!(same_origin.status(), 200);
    let framed_elsewhere = harness
        .client
        .get(harness.url("/ui"))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .expect("request");
    expect_problem(framed_elsewhere, 403, "origin_not_allowed").await;
    harness.stop().await;
}
