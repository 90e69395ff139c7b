//! Consuming through a subscription: long-poll receive, then ack, nack or extend by receipt.
//!
//! The receive reply is written by [`message::receive_reply`] straight from the
//! deliveries; [`ReceiveResponse`] is its OpenAPI schema.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use broker_core::broker::{Delivery, ReceiptFailure, ReceiveRequest, SettleOutcome};
use broker_core::limits::{
    DEFAULT_RECEIVE_MESSAGES, DEFAULT_WAIT_MS, MAX_RECEIVE_MESSAGES, MAX_WAIT_MS, check_range,
};

use crate::api::SubscriptionPath;
use crate::api::consume::{
    AckRequest, AckResponse, ExtendRequest, ExtendResponse, FailedReceipt, NackRequest,
    NackResponse, ReceiveBody, ReceiveResponse,
};
use crate::app::AppState;
use crate::fanout::gather;
use crate::http::codes;
use crate::http::consumed_by::ConsumedBy;
use crate::http::extract::{JsonBody, OptionalJsonBody, PathParams};
use crate::http::long_poll::long_poll;
use crate::http::problem::{ApiError, Problem};
use crate::json::message::{self, DeliveryParts, json_response};
use crate::limits::memory::answer_memory;

fn failed(outcome: &mut SettleOutcome) -> Vec<FailedReceipt> {
    std::mem::take(&mut outcome.failed)
        .into_iter()
        .map(|(receipt, failure)| FailedReceipt {
            receipt,
            code: match failure {
                ReceiptFailure::Invalid => codes::RECEIPT_INVALID.code,
            },
        })
        .collect()
}

/// Receive messages (long-poll).
///
/// Returns as soon as at least one message is available, or empty after `wait_ms`. Each
/// message is leased for `ack_timeout_ms`; not acked in time, it is redelivered with
/// `delivery_attempt + 1` after the retry backoff. While the server drains for shutdown, a
/// pending receive returns within a second with what it has.
///
/// A client that lost a reply repeats the receive with the same `attempt_id`: while the
/// leases of that attempt last it gets the same messages with the same receipts (those
/// already acked or expired left out); another attempt id gets other messages.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/receive \
///   -d '{"max_messages": 10, "wait_ms": 20000, "attempt_id": "worker-7-poll-1234"}'
/// ```
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions/{sub}/receive", tag = "consume",
    params(SubscriptionPath), request_body = Option<ReceiveBody>,
    responses(
        (status = 200, description = "Leased messages, possibly none", body = ReceiveResponse),
        (status = 400, description = "A value out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "A non-empty body that is not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn receive(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    headers: HeaderMap,
    ConsumedBy(consumer): ConsumedBy,
    OptionalJsonBody(body): OptionalJsonBody<ReceiveBody>,
) -> Result<Response, ApiError> {
    let max_messages = body.max_messages.unwrap_or(DEFAULT_RECEIVE_MESSAGES);
    let wait_ms = body.wait_ms.unwrap_or(DEFAULT_WAIT_MS);
    let memory = answer_memory(&state.edge.memory);
    if let Some(leaders) = gather::leaders_to_gather(&state, &headers, &path.topic)? {
        check_range("max_messages", max_messages, 1, MAX_RECEIVE_MESSAGES)?;
        check_range("wait_ms", wait_ms, 0, MAX_WAIT_MS)?;
        let ask = gather::ReceiveAsk {
            max_messages,
            wait_ms,
            ack_timeout_ms: body.ack_timeout_ms,
            attempt_id: body.attempt_id.clone(),
            consumer: Some(consumer),
        };
        let reply =
            gather::gather_receive(&state, &headers, &path, &ask, Some(memory), leaders).await?;
        return Ok(json_response(reply));
    }
    let attempt = |wait_ms| {
        let request = ReceiveRequest {
            max_messages,
            wait_ms,
            ack_timeout_ms: body.ack_timeout_ms,
            attempt_id: body.attempt_id.clone(),
            memory: Some(memory.clone()),
        };
        state
            .broker
            .receive_from(&path.topic, &path.sub, request, Some(&consumer))
    };
    let deliveries = long_poll(&state, wait_ms, attempt, |found: &Vec<Delivery>| {
        !found.is_empty()
    })
    .await?;
    // Serialized here, while `memory` still holds the reservation; the edge then charges the
    // serialized body until it is sent.
    let body = message::receive_reply(deliveries.iter().map(DeliveryParts::from));
    Ok(json_response(body))
}

/// Ack receipts: the messages are done.
///
/// A receipt whose lease has ended fails with `receipt_invalid` and does not ack a newer
/// delivery of the message.
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions/{sub}/ack", tag = "consume",
    params(SubscriptionPath), request_body = AckRequest,
    responses(
        (status = 200, description = "Per-receipt outcome", body = AckResponse),
        (status = 400, description = "Malformed request or a receipt count out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn ack(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    headers: HeaderMap,
    ConsumedBy(consumer): ConsumedBy,
    JsonBody(request): JsonBody<AckRequest>,
) -> Result<Json<AckResponse>, ApiError> {
    let mut outcome = gather::scatter_settle(
        &state,
        &headers,
        &path,
        request.receipts,
        "ack",
        |share| serde_json::json!({ "receipts": share }),
        |receipts| {
            let (broker, topic, sub) = (&state.broker, &path.topic, &path.sub);
            let consumer = Some(&*consumer);
            async move { broker.ack_from(topic, sub, &receipts, consumer).await }
        },
    )
    .await?;
    let failed = failed(&mut outcome);
    Ok(Json(AckResponse {
        acked: outcome.succeeded,
        failed,
    }))
}

/// Nack receipts: redeliver the messages after `delay_ms`, or after the retry backoff.
///
/// A nack counts as a failed delivery: after the subscription's `max_deliveries` the message
/// moves to its dead-letter topic, with the nack's `error` text in `wharf-dlq-error`.
///
/// ```text
/// curl -H 'content-type: application/json' localhost:8080/v1/topics/orders/subscriptions/billing/nack \
///   -d '{"receipts": ["AQAAAAAAAAAB…"], "error": "payment service timed out"}'
/// ```
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions/{sub}/nack", tag = "consume",
    params(SubscriptionPath), request_body = NackRequest,
    responses(
        (status = 200, description = "Per-receipt outcome", body = NackResponse),
        (status = 400, description = "Malformed request or a value out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn nack(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    headers: HeaderMap,
    ConsumedBy(consumer): ConsumedBy,
    JsonBody(request): JsonBody<NackRequest>,
) -> Result<Json<NackResponse>, ApiError> {
    let (delay_ms, error) = (request.delay_ms, request.error);
    let mut outcome = gather::scatter_settle(
        &state,
        &headers,
        &path,
        request.receipts,
        "nack",
        |share| serde_json::json!({ "receipts": share, "delay_ms": delay_ms, "error": error }),
        |receipts| {
            let (broker, topic, sub) = (&state.broker, &path.topic, &path.sub);
            let (error, consumer) = (error.as_deref(), Some(&*consumer));
            async move {
                let nack = (delay_ms, error);
                broker
                    .nack_from(topic, sub, &receipts, nack, consumer)
                    .await
            }
        },
    )
    .await?;
    let failed = failed(&mut outcome);
    Ok(Json(NackResponse {
        nacked: outcome.succeeded,
        failed,
    }))
}

/// Extend leases: the messages stay invisible to others for `ack_timeout_ms` from now.
#[utoipa::path(post, path = "/v1/topics/{topic}/subscriptions/{sub}/extend", tag = "consume",
    params(SubscriptionPath), request_body = ExtendRequest,
    responses(
        (status = 200, description = "Per-receipt outcome", body = ExtendResponse),
        (status = 400, description = "Malformed request or a value out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn extend(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    headers: HeaderMap,
    ConsumedBy(consumer): ConsumedBy,
    JsonBody(request): JsonBody<ExtendRequest>,
) -> Result<Json<ExtendResponse>, ApiError> {
    let ack_timeout_ms = request.ack_timeout_ms;
    let mut outcome = gather::scatter_settle(
        &state,
        &headers,
        &path,
        request.receipts,
        "extend",
        |share| serde_json::json!({ "receipts": share, "ack_timeout_ms": ack_timeout_ms }),
        |receipts| {
            let (broker, topic, sub) = (&state.broker, &path.topic, &path.sub);
            let consumer = Some(&*consumer);
            async move {
                broker
                    .extend_from(topic, sub, &receipts, ack_timeout_ms, consumer)
                    .await
            }
        },
    )
    .await?;
    let failed = failed(&mut outcome);
    Ok(Json(ExtendResponse {
        extended: outcome.succeeded,
        failed,
    }))
}
