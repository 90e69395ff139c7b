//! Extractors whose rejections become problem+json: [`JsonBody`], [`OptionalJsonBody`],
//! [`RawBody`], [`PathParams`] and [`QueryParams`]. Handlers use these instead of axum's own, so no axum
//! plain-text rejection ever reaches a client.

use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::http::problem::ApiError;
use crate::{json::integral_floats, json::object};

/// A JSON request body (`Content-Type: application/json` or `*/*+json`), parsed by
/// [`parse_json`].
#[derive(Debug)]
pub(crate) struct JsonBody<T>(pub T);

impl<T, S> FromRequest<S> for JsonBody<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        if !is_json_content_type(request.headers()) {
            return Err(ApiError::UnsupportedMediaType);
        }
        let body = Bytes::from_request(request, state).await?;
        parse_json(&body).map(JsonBody)
    }
}

/// Path parameters.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct PathParams<T>(pub T);

/// Query-string parameters.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct QueryParams<T>(pub T);

/// A JSON body that may be left out: an empty body means `T::default()`, whatever the
/// Content-Type; a non-empty one must be JSON, where `null` also means `T::default()` (the
/// document marks these bodies optional, and JSON's way to say "none" is `null`).
#[derive(Debug)]
pub(crate) struct OptionalJsonBody<T>(pub T);

impl<T, S> FromRequest<S> for OptionalJsonBody<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let is_json = is_json_content_type(request.headers());
        let body = Bytes::from_request(request, state).await?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJsonBody(T::default()));
        }
        if !is_json {
            return Err(ApiError::UnsupportedMediaType);
        }
        if body.trim_ascii() == b"null" {
            return Ok(OptionalJsonBody(T::default()));
        }
        parse_json(&body).map(OptionalJsonBody)
    }
}

/// The raw request body, within `max_body_bytes`.
#[derive(Debug)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Ok(RawBody(Bytes::from_request(request, state).await?))
    }
}

/// Parses a JSON body already read into memory, with axum's field-path error messages. A body
/// the type refuses is tried once more with its integral floats (`5.0`) read as integers
/// ([`integral_floats`]), as JSON Schema counts them; the first refusal is the one reported.
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    object::refuse_array_body(body)?;
    let refusal = match axum::Json::<T>::from_bytes(body) {
        Ok(axum::Json(value)) => return Ok(value),
        Err(rejection) => ApiError::from(rejection),
    };
    let Some(rewritten) = integral_floats::rewrite(body) else {
        return Err(refusal);
    };
    axum::Json::<T>::from_bytes(&rewritten)
        .map(|axum::Json(value)| value)
        .map_err(|_| refusal)
}

/// Parses a JSON body that the result may borrow from (strings without escapes are not
/// copied), with the same field-path error messages as [`parse_json`].
pub(crate) fn parse_json_borrowed<'a, T: serde::Deserialize<'a>>(
    body: &'a [u8],
) -> Result<T, ApiError> {
    object::refuse_array_body(body)?;
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let what = match error.inner().classify() {
            serde_json::error::Category::Data => {
                "Failed to deserialize the JSON body into the target type"
            }
            _ => "Failed to parse the request body as JSON",
        };
        ApiError::invalid(format!("{what}: {error}"))
    })?;
    deserializer.end().map_err(|error| {
        ApiError::invalid(format!("Failed to parse the request body as JSON: {error}"))
    })?;
    Ok(value)
}

/// Whether the request says its body is JSON: `application/json` or any `+json` type.
pub(crate) fn is_json_content_type(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(|media| {
        media == "application/json"
            || (media.starts_with("application/") && media.ends_with("+json"))
    })
}

/// The request's media type, lowercased and without parameters (`text/plain; charset=utf-8`
/// gives `text/plain`).
pub(crate) fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next().unwrap_or_default().trim();
    Some(media.to_ascii_lowercase())
}

/// Turns an axum rejection into an [`ApiError`] by its status: 413 and 415 keep their meaning,
/// a 5xx (an extractor misused) is internal, every other rejection is bad input.
fn from_rejection(status: StatusCode, text: String) -> ApiError {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::BodyTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType,
        status if status.is_server_error() => ApiError::Internal { detail: text },
        _ => ApiError::invalid(text),
    }
}

macro_rules! rejection_into_api_error {
    ($($rejection:ty),*) => {$(
        impl From<$rejection> for ApiError {
            fn from(rejection: $rejection) -> Self {
                from_rejection(rejection.status(), rejection.body_text())
            }
        }
    )*};
}

rejection_into_api_error!(JsonRejection, PathRejection, QueryRejection, BytesRejection);

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).expect("valid header"),
        );
        headers
    }

    #[test]
    fn json_and_plus_json_are_json_with_or_without_parameters() {
        assert!(is_json_content_type(&headers("application/json")));
        assert!(is_json_content_type(&headers(
            "Application/JSON; charset=utf-8"
        )));
        assert!(is_json_content_type(&headers(
            "application/cloudevents+json"
        )));
        assert!(!is_json_content_type(&headers("text/plain")));
        assert!(!is_json_content_type(&HeaderMap::new()));
    }
}
