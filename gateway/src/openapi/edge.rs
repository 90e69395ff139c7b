//! What the edge adds to every operation of the OpenAPI document: the `bearer` (JWT)
//! security scheme, required on every route but the probes (and, when so configured, the
//! docs), and the edge's responses: 401 `unauthorized`, 403 `forbidden`, and on every
//! operation 403 `host_not_allowed`/`origin_not_allowed` ([`crate::http::browser_guard`]), 408
//! `request_timeout`, 413 `message_too_large` (operations with a body), 429 `rate_limited`,
//! 431 `headers_too_large` (every operation, [`crate::http::head_size`]), 503 `overloaded`. Applied after the routes are collected, so new routes get it too. A
//! response an operation documents itself is kept.

use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Components, OpenApi, Ref, RefOr, Response};

use crate::auth::policy::{Rule, classify};
use crate::http::problem::PROBLEM_JSON;

/// The security scheme's name in the document.
pub(crate) const BEARER: &str = "bearer";

fn problem(description: &str) -> RefOr<Response> {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("Problem")))
        .build();
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(PROBLEM_JSON, content)
            .build(),
    )
}

/// The 403 of the browser guard, which every operation can answer.
const BROWSER_GUARD: &str = "A browser request for a page of another origin \
    (`origin_not_allowed`), or, when the server is anonymous, a `Host` that is not a loopback \
    name, an IP address or in `allowed_hosts` (`host_not_allowed`)";

/// The 403 of an operation on a topic.
const FORBIDDEN_OR_BROWSER_GUARD: &str = "The token's scope lacks the grant on the topic \
    (`forbidden`); or a browser request for a page of another origin (`origin_not_allowed`), \
    or, when the server is anonymous, a `Host` that is not a loopback name, an IP address or \
    in `allowed_hosts` (`host_not_allowed`)";

/// The 431 of every operation (the edge's head check, [`crate::http::head_size`]).
const HEADERS_TOO_LARGE: &str = "The request line and headers are over `max_header_bytes`, or \
    the headers more than `max_headers` (`headers_too_large`); a head far over them is cut by \
    the HTTP layer with a bare 431 and the connection closed";

/// Adds the scheme, the requirement and the edge's responses to `document`.
pub(crate) fn document_edge(document: &mut OpenApi) {
    let scheme = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .bearer_format("JWT")
        .description(Some(
            "A JWT signed by a configured key (HS256, RS256, ES256 or EdDSA, chosen by `kid`). \
             Claims: `sub`, `exp` (required), `iss`/`aud` when configured, and `scope`: \
             space-separated `produce:<glob>`, `consume:<glob>`, `admin:<glob>` grants.",
        ))
        .build();
    document
        .components
        .get_or_insert_with(Components::new)
        .add_security_scheme(BEARER, SecurityScheme::Http(scheme));
    for (path, item) in document.paths.paths.iter_mut() {
        let operations = [
            ("GET", &mut item.get),
            ("PUT", &mut item.put),
            ("POST", &mut item.post),
            ("DELETE", &mut item.delete),
            ("PATCH", &mut item.patch),
        ];
        for (method, operation) in operations {
            let Some(operation) = operation else { continue };
            let method = axum::http::Method::from_bytes(method.as_bytes()).unwrap_or_default();
            let rule = classify(&method, path).rule;
            let forbidden = if matches!(
                rule,
                Rule::Public | Rule::Docs | Rule::Metrics | Rule::Authenticated
            ) {
                BROWSER_GUARD
            } else {
                FORBIDDEN_OR_BROWSER_GUARD
            };
            operation
                .responses
                .responses
                .entry("403".to_owned())
                .or_insert_with(|| problem(forbidden));
            operation
                .responses
                .responses
                .entry("431".to_owned())
                .or_insert_with(|| problem(HEADERS_TOO_LARGE));
            if rule == Rule::Public {
                continue;
            }
            operation.security = Some(vec![SecurityRequirement::new(BEARER, Vec::<String>::new())]);
            let takes_body = operation.request_body.is_some();
            let responses = &mut operation.responses.responses;
            let mut add = |status: &str, description: &str| {
                responses
                    .entry(status.to_owned())
                    .or_insert_with(|| problem(description));
            };
            add(
                "401",
                "No valid bearer token (`unauthorized`); see `WWW-Authenticate`",
            );
            add(
                "408",
                "The body did not arrive within `body_read_timeout_ms`, or no answer within \
                 `request_timeout_ms` (`request_timeout`)",
            );
            if takes_body {
                add(
                    "413",
                    "The body is over `max_body_bytes` (`message_too_large`)",
                );
            }
            add(
                "429",
                "A rate limit is spent (`rate_limited`); see `Retry-After` and `RateLimit-*`",
            );
            add(
                "503",
                "A budget is spent (`overloaded`) or the server is shutting down; see `Retry-After`",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::auth::policy::lookup;

    #[test]
    fn every_documented_operation_has_a_row_in_the_access_table() {
        let document = serde_json::to_value(crate::openapi::document()).expect("json");
        let paths = document["paths"].as_object().expect("paths");
        let mut checked = 0;
        for (path, item) in paths {
            for method in ["get", "put", "post", "delete", "patch"] {
                if item.get(method).is_none() {
                    continue;
                }
                let method = axum::http::Method::from_bytes(method.to_uppercase().as_bytes())
                    .expect("method");
                assert!(
                    lookup(&method, path).is_some(),
                    "{method} {path} is routed but missing from auth::policy::ROUTES"
                );
                checked += 1;
            }
        }
        assert!(checked >= 20);
    }
}
