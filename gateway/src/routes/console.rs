//! The web console: a page and its files, public (the page holds no data; every API call it
//! makes carries the bearer token the user enters), built into the binary ([`crate::governance::console`]).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api::console::AssetPath;
use crate::governance::console::{self, Asset};
use crate::http::extract::PathParams;
use crate::http::problem::{ApiError, Problem};

/// The web console.
///
/// One page (hash routing): topics, subscriptions, message lookup, alerts and the cluster,
/// read through this API with the bearer token entered on the page. Public: the page holds no
/// data. Served with a strict `Content-Security-Policy` (this origin only, no inline script).
#[utoipa::path(get, path = "/ui", tag = "console",
    responses(
        (status = 200, description = "The console's page", content_type = "text/html",
            body = String),
        (status = 304, description = "Not modified since the `ETag` given in `If-None-Match`")))]
pub(crate) async fn console_page(headers: HeaderMap) -> Response {
    serve(&console::INDEX, &headers)
}

/// A file of the web console: `index.html`, `console.js`, `console.css`, `uPlot.iife.min.js`,
/// `uPlot.min.css`.
#[utoipa::path(get, path = "/ui/{asset}", tag = "console", params(AssetPath),
    responses(
        (status = 200, description = "The file",
            content((String = "text/javascript"), (String = "text/css"), (String = "text/html"))),
        (status = 304, description = "Not modified since the `ETag` given in `If-None-Match`"),
        (status = 404, description = "No such file (`asset_not_found`)", body = Problem,
            content_type = "application/problem+json")))]
pub(crate) async fn console_asset(
    PathParams(path): PathParams<AssetPath>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    match console::asset(&path.asset) {
        Some(asset) => Ok(serve(asset, &headers)),
        None => Err(ApiError::AssetNotFound { name: path.asset }),
    }
}

fn serve(asset: &'static Asset, request: &HeaderMap) -> Response {
    let etag = console::etag();
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| console::matches_etag(value, etag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(console::CACHE_CONTROL),
    );
    headers.insert(header::ETAG, HeaderValue::from_static(etag));
    for (name, value) in console::HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
