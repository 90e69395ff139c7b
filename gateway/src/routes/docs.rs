//! The API's own documentation: the OpenAPI document and the HTML reference rendered from it.

use axum::http::header;
use axum::response::{Html, IntoResponse};

use crate::openapi;

/// The OpenAPI 3.1 document.
#[utoipa::path(get, path = "/openapi.json", tag = "docs",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API",
        content_type = "application/json", body = Object)))]
pub(crate) async fn openapi_json() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi::pretty_json(),
    )
}

/// A human-readable API reference.
///
/// Rendered on the server from the OpenAPI document; plain HTML that works offline.
#[utoipa::path(get, path = "/docs", tag = "docs",
    responses((status = 200, description = "The API reference page", content_type = "text/html",
        body = String)))]
pub(crate) async fn docs_page() -> Html<&'static str> {
    Html(openapi::docs_html())
}
