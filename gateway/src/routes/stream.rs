//! Server-Sent Events delivery: a subscription's messages pushed down one long response,
//! acked through the ordinary `ack` route.
//!
//! A spawned `StreamLoop` owns the sending half of a bounded channel and the response body
//! reads the other half. The loop leases messages with the broker's receive in waits of at
//! most [`LONG_POLL_SLICE_MS`], never cancelled half-way (a receive may have leased messages
//! before it returns). When the client goes away the body, and with it the receiving half, is
//! dropped; the loop sees the closed channel between receives and ends. A client that stops
//! reading fills the channel: the loop's send blocks, so it leases nothing more, and after
//! [`SEND_TIMEOUT_MS`] it ends the stream. The stream's slot (`max_streams`) is taken and held
//! by the [`edge`](crate::http::edge) for the life of the response.
//!
//! In a cluster, a stream on a node that does not lead every partition of the topic receives
//! by the gather's rounds ([`gather::gather_messages`]: this node's partitions, then every
//! other leader over HTTP with the client's credentials), and releases unsent messages on
//! their leaders ([`gather::settle_on_leaders`]); receipts ack through `POST …/ack` on any
//! node. Its room counts a message another leader leased from when it is sent until this
//! node's replica shows the lease ended (or, never shown leased, for
//! [`REPLICA_APPLY_GRACE_MS`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use broker_core::broker::{Delivery, ReceiveRequest};
use broker_core::limits::check_range;
use broker_core::subscription::config::validate_ack_timeout;
use broker_core::{BrokerError, Origin};
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::api::SubscriptionPath;
use crate::api::stream::{StreamEvent, StreamQuery};
use crate::app::AppState;
use crate::fanout::gather;
use crate::http::consumed_by::ConsumedBy;
use crate::http::extract::{PathParams, QueryParams};
use crate::http::long_poll::LONG_POLL_SLICE_MS;
use crate::http::problem::{ApiError, Problem};
use crate::json::message::{self, DeliveryParts};
use crate::limits::memory::{AnswerMemory, answer_memory};

/// Default `max_in_flight`: unacked messages one stream may hold. Ten keeps a consumer busy
/// through an ack's round trip without leasing work that other consumers could take.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 10;
/// Largest `max_in_flight`: one broker receive's worth of messages.
pub const MAX_MAX_IN_FLIGHT: usize = broker_core::limits::MAX_RECEIVE_MESSAGES;
/// Default `heartbeat_ms`: an idle stream sends a comment line this often, inside the 30 to 60
/// s idle timeouts of common proxies and load balancers, and so that a vanished client is
/// noticed (a write to its closed socket fails) within two heartbeats.
pub const DEFAULT_HEARTBEAT_MS: u64 = 15_000;
/// Shortest `heartbeat_ms`: below 100 ms heartbeats would cost more than the messages.
pub const MIN_HEARTBEAT_MS: u64 = 100;
/// Longest `heartbeat_ms`: past a minute most proxies have cut an idle connection.
pub const MAX_HEARTBEAT_MS: u64 = 60_000;
/// Events buffered between the loop and the response body. A few are enough to keep the
/// socket busy; fewer mean a client that stops reading stops the leasing sooner.
pub const STREAM_BUFFER_EVENTS: usize = 4;
/// How long the loop waits for a client that is not reading before it ends the stream. Long
/// enough for a slow network to drain one batch, short enough to free the slot and the leases.
pub const SEND_TIMEOUT_MS: u64 = 30_000;
/// Pause between checks of which in-flight messages were settled while the stream is full:
/// acks show up within this long, and a full stream costs ten cheap lease lookups a second.
pub const FULL_STREAM_POLL_MS: u64 = 100;
/// In a cluster, how long a message another leader leased for the stream counts as in flight
/// before this node's replica of its partition shows the lease: the leader answered once
/// the lease was committed, and a replica applies a committed entry within a heartbeat or
/// two; a second covers a busy node without holding back a stream whose consumer acked at
/// once (and so was never seen leased here) for long.
pub const REPLICA_APPLY_GRACE_MS: u64 = 1_000;

/// The checked settings of one stream.
#[derive(Debug, Clone, Copy)]
struct StreamSettings {
    max_in_flight: usize,
    ack_timeout_ms: Option<u64>,
    heartbeat: Duration,
}

impl StreamQuery {
    fn settings(&self) -> Result<StreamSettings, ApiError> {
        let max_in_flight = check_range(
            "max_in_flight",
            self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT),
            1,
            MAX_MAX_IN_FLIGHT,
        )?;
        let heartbeat_ms = check_range(
            "heartbeat_ms",
            self.heartbeat_ms.unwrap_or(DEFAULT_HEARTBEAT_MS),
            MIN_HEARTBEAT_MS,
            MAX_HEARTBEAT_MS,
        )?;
        let ack_timeout_ms = self
            .ack_timeout_ms
            .map(|ms| validate_ack_timeout("ack_timeout_ms", ms))
            .transpose()?;
        Ok(StreamSettings {
            max_in_flight,
            ack_timeout_ms,
            heartbeat: Duration::from_millis(heartbeat_ms),
        })
    }
}

/// Stream messages (Server-Sent Events).
///
/// Delivers the subscription's messages as they arrive, as `text/event-stream`: each message
/// is one event with `event: message`, `id:` its receipt, and `data:` the same JSON object a
/// receive returns. Messages are leased exactly as by a receive; ack (or nack, extend) them
/// with `POST …/ack` and the receipt. At most `max_in_flight` sent messages are unacked at
/// once: when that many are, the stream sends nothing more until some are acked, nacked or
/// their lease ends. An idle stream sends a comment line (`: heartbeat`) every
/// `heartbeat_ms`. If the subscription or topic goes away, a final `event: error` carries a
/// problem JSON (`subscription_not_found`, …) and the stream ends; when the server shuts
/// down, the stream just ends (reconnect, to this node or another).
///
/// Reconnecting: delivery state lives in the subscription, not in the connection, so a new
/// stream simply continues with the subscription's next messages. Messages an old stream
/// sent and that were not acked stay leased to their receipts (which still ack them) until
/// their lease ends, then are redelivered with `delivery_attempt + 1`, to this or any other
/// consumer. A `Last-Event-ID` header (sent by `EventSource` on reconnect) is taken as the
/// receipt of a message the client still holds: while its lease lasts it counts against the
/// new stream's `max_in_flight`; it never replays or skips anything.
///
/// A client that stops reading is cut off after 30 s; leased messages it never got come back
/// at once, those it got come back when their lease ends.
///
/// ```text
/// curl -N 'localhost:8080/v1/topics/orders/subscriptions/billing/stream?max_in_flight=5'
/// ```
#[utoipa::path(get, path = "/v1/topics/{topic}/subscriptions/{sub}/stream", tag = "consume",
    params(SubscriptionPath, StreamQuery,
        ("Last-Event-ID" = Option<String>, Header,
            description = "The receipt of the last event seen, on a reconnect")),
    responses(
        (status = 200, description = "An event stream of `message` events, heartbeat comments and a final `error` event",
            content_type = "text/event-stream", body = StreamEvent),
        (status = 400, description = "A query parameter out of range (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such topic or subscription (`topic_not_found`, `subscription_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "This client holds its share of streams (`rate_limited`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Every stream slot is taken (`overloaded`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn stream(
    State(state): State<AppState>,
    PathParams(path): PathParams<SubscriptionPath>,
    QueryParams(query): QueryParams<StreamQuery>,
    headers: HeaderMap,
    ConsumedBy(consumer): ConsumedBy,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let settings = query.settings()?;
    state
        .broker
        .describe_subscription(&path.topic, &path.sub)
        .await?;
    let in_flight = headers
        .get("last-event-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .into_iter()
        .collect();
    let (sender, receiver) = mpsc::channel(STREAM_BUFFER_EVENTS);
    let stream_loop = StreamLoop {
        state,
        path,
        headers,
        consumer,
        settings,
        sender,
        in_flight,
        unconfirmed: Vec::new(),
        last_sent: Instant::now(),
    };
    tokio::spawn(stream_loop.run());
    let events = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        Some((Ok(event), receiver))
    });
    Ok(Sse::new(events))
}

/// What one receive step took.
enum Received {
    /// This node's own deliveries (it leads every partition, or runs alone).
    Here(Vec<Delivery>),
    /// Messages gathered from every partition's leader ([`gather::gather_messages`]).
    Gathered(Vec<gather::GatheredMessage>),
}

/// Why a stream ends.
enum End {
    /// The client went away or stopped reading, or the server drains: end quietly.
    Quiet,
    /// The broker refused: tell the client, then end.
    Failed(ApiError),
}

/// The task behind one stream: leases, sends, and keeps count of what is unacked.
struct StreamLoop {
    state: AppState,
    path: SubscriptionPath,
    /// The client's headers: its credentials for the other leaders, in a cluster.
    headers: HeaderMap,
    /// Who consumes ([`crate::http::consumed_by`]): named in the events of what the stream
    /// receives here and of the unsent messages it releases.
    consumer: Arc<Origin>,
    settings: StreamSettings,
    sender: mpsc::Sender<Event>,
    /// Receipts sent and maybe not yet settled.
    in_flight: Vec<String>,
    /// In a cluster, receipts other leaders leased and this node's replica has not shown
    /// leased yet, with when they were sent (see [`REPLICA_APPLY_GRACE_MS`]).
    unconfirmed: Vec<(String, Instant)>,
    /// When the last event (message or heartbeat) was queued.
    last_sent: Instant,
}

impl StreamLoop {
    async fn run(mut self) {
        if let Err(End::Failed(error)) = self.serve().await {
            let problem = error.problem();
            let event = Event::default()
                .event("error")
                .json_data(&problem)
                .unwrap_or_else(|_| Event::default().event("error"));
            let _ = self.send(event).await;
        }
    }

    async fn serve(&mut self) -> Result<(), End> {
        loop {
            if self.sender.is_closed() || self.state.is_draining() {
                return Err(End::Quiet);
            }
            if self.last_sent.elapsed() >= self.settings.heartbeat {
                self.send(Event::default().comment("heartbeat")).await?;
            }
            let room = self.room()?;
            let until_heartbeat = self
                .settings
                .heartbeat
                .saturating_sub(self.last_sent.elapsed());
            if room == 0 {
                let pause = until_heartbeat.min(Duration::from_millis(FULL_STREAM_POLL_MS));
                tokio::time::sleep(pause).await;
                continue;
            }
            let wait = until_heartbeat.min(Duration::from_millis(LONG_POLL_SLICE_MS));
            let memory = answer_memory(&self.state.edge.memory);
            let deliveries = match self.receive(room, wait, &memory).await {
                // A spent memory budget pauses the stream, as a full one does.
                Err(End::Failed(ApiError::Broker(BrokerError::Overloaded { .. }))) => {
                    tokio::time::sleep(Duration::from_millis(FULL_STREAM_POLL_MS)).await;
                    continue;
                }
                received => received?,
            };
            // `memory` keeps the batch's reservation until its events are queued.
            self.deliver(deliveries).await?;
        }
    }

    /// Forgets in-flight receipts that were settled or expired; returns the room left.
    fn room(&mut self) -> Result<usize, End> {
        if !self.in_flight.is_empty() {
            let leased = self.still_leased(&self.in_flight)?;
            let mut leased = leased.into_iter();
            self.in_flight.retain(|_| leased.next().unwrap_or_default());
        }
        if !self.unconfirmed.is_empty() {
            self.confirm()?;
        }
        Ok(self
            .settings
            .max_in_flight
            .saturating_sub(self.in_flight.len() + self.unconfirmed.len()))
    }

    /// Moves the unconfirmed receipts this node's replica now shows leased to `in_flight`, and
    /// forgets those past [`REPLICA_APPLY_GRACE_MS`].
    fn confirm(&mut self) -> Result<(), End> {
        let receipts: Vec<String> = self.unconfirmed.iter().map(|(r, _)| r.clone()).collect();
        let leased = self.still_leased(&receipts)?;
        let grace = Duration::from_millis(REPLICA_APPLY_GRACE_MS);
        let mut waiting = Vec::new();
        for ((receipt, sent), leased) in self.unconfirmed.drain(..).zip(leased) {
            match leased {
                true => self.in_flight.push(receipt),
                false if sent.elapsed() < grace => waiting.push((receipt, sent)),
                false => {}
            }
        }
        self.unconfirmed = waiting;
        Ok(())
    }

    fn still_leased(&self, receipts: &[String]) -> Result<Vec<bool>, End> {
        self.state
            .broker
            .still_leased(&self.path.topic, &self.path.sub, receipts)
            .map_err(|error| End::Failed(error.into()))
    }

    async fn receive(
        &self,
        room: usize,
        wait: Duration,
        memory: &AnswerMemory,
    ) -> Result<Received, End> {
        let wait_ms = u64::try_from(wait.as_millis()).unwrap_or(LONG_POLL_SLICE_MS);
        let failed = |error: BrokerError| End::Failed(error.into());
        let leaders = gather::leaders_to_stream_from(&self.state, &self.headers, &self.path.topic)
            .map_err(failed)?;
        if let Some(leaders) = leaders {
            let ask = gather::ReceiveAsk {
                max_messages: room,
                wait_ms,
                ack_timeout_ms: self.settings.ack_timeout_ms,
                attempt_id: None,
                consumer: Some(Arc::clone(&self.consumer)),
            };
            let memory = Some(memory.clone());
            let (state, headers, path) = (&self.state, &self.headers, &self.path);
            let gathered = gather::gather_messages(state, headers, path, &ask, memory, leaders);
            return gathered.await.map(Received::Gathered).map_err(failed);
        }
        let request = ReceiveRequest {
            max_messages: room,
            wait_ms,
            ack_timeout_ms: self.settings.ack_timeout_ms,
            attempt_id: None,
            memory: Some(memory.clone()),
        };
        let consumer = Some(&*self.consumer);
        self.state
            .broker
            .receive_from(&self.path.topic, &self.path.sub, request, consumer)
            .await
            .map(Received::Here)
            .map_err(failed)
    }

    /// Sends each message received as an event; if the client is gone, hands the unsent ones
    /// back.
    async fn deliver(&mut self, received: Received) -> Result<(), End> {
        match received {
            Received::Here(deliveries) => {
                let messages = deliveries.into_iter().map(|delivery| {
                    let json = message::received_message(DeliveryParts::from(&delivery));
                    (delivery.receipt, json)
                });
                self.send_messages(messages, false).await
            }
            Received::Gathered(gathered) => {
                let messages = gathered.into_iter().map(|m| (m.receipt, m.json));
                self.send_messages(messages, true).await
            }
        }
    }

    /// Sends `messages` (receipt and JSON) as events; `gathered` ones count as in flight from
    /// [`REPLICA_APPLY_GRACE_MS`]'s start until this node's replica shows their leases.
    async fn send_messages(
        &mut self,
        messages: impl Iterator<Item = (String, Vec<u8>)>,
        gathered: bool,
    ) -> Result<(), End> {
        let mut pending = messages;
        while let Some((receipt, message)) = pending.next() {
            let event = String::from_utf8(message)
                .map(|data| Event::default().event("message").id(&receipt).data(data));
            let sent = match event {
                Ok(event) => self.send(event).await,
                Err(error) => {
                    tracing::error!(%error, "a message could not be encoded for a stream");
                    Err(End::Quiet)
                }
            };
            if let Err(end) = sent {
                let unsent = std::iter::once(receipt)
                    .chain(pending.map(|(receipt, _)| receipt))
                    .collect();
                self.release(unsent).await;
                return Err(end);
            }
            match gathered {
                true => self.unconfirmed.push((receipt, Instant::now())),
                false => self.in_flight.push(receipt),
            }
        }
        Ok(())
    }

    /// Queues one event, waiting at most [`SEND_TIMEOUT_MS`] for a client that is slow to
    /// read.
    async fn send(&mut self, event: Event) -> Result<(), End> {
        let timeout = Duration::from_millis(SEND_TIMEOUT_MS);
        match tokio::time::timeout(timeout, self.sender.send(event)).await {
            Ok(Ok(())) => {
                self.last_sent = Instant::now();
                Ok(())
            }
            Ok(Err(_)) | Err(_) => Err(End::Quiet),
        }
    }

    /// Ends the leases of messages that were leased but never sent, so they come back at once
    /// instead of after their lease.
    async fn release(&self, receipts: Vec<String>) {
        let (broker, path, consumer) = (&self.state.broker, &self.path, Some(&*self.consumer));
        let here = |receipts: Vec<String>| async move {
            let release = (Some(0), None);
            broker
                .nack_from(&path.topic, &path.sub, &receipts, release, consumer)
                .await
        };
        let leaders = gather::leaders_to_stream_from(&self.state, &self.headers, &path.topic);
        let nacked = match leaders {
            Ok(Some(leaders)) => {
                let body = |share: &[String]| serde_json::json!({"receipts": share, "delay_ms": 0});
                let (state, headers) = (&self.state, &self.headers);
                gather::settle_on_leaders(
                    state, headers, path, receipts, &leaders, "nack", body, here,
                )
                .await
            }
            Ok(None) => here(receipts).await,
            Err(error) => Err(error),
        };
        if let Err(error) = nacked {
            tracing::warn!(%error, "could not release the unsent messages of a closed stream");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(query: StreamQuery) -> String {
        query.settings().expect_err("out of range").to_string()
    }

    #[test]
    fn out_of_range_parameters_are_refused_naming_the_parameter_and_its_bounds() {
        let in_flight = StreamQuery {
            max_in_flight: Some(MAX_MAX_IN_FLIGHT + 1),
            ..StreamQuery::default()
        };
        assert_eq!(
            refusal(in_flight),
            "max_in_flight: must be 1 to 1000, got 1001"
        );
        let heartbeat = StreamQuery {
            heartbeat_ms: Some(MIN_HEARTBEAT_MS - 1),
            ..StreamQuery::default()
        };
        assert_eq!(
            refusal(heartbeat),
            "heartbeat_ms: must be 100 to 60000, got 99"
        );
    }

    #[test]
    fn the_bounds_themselves_are_accepted() {
        let settings = StreamQuery {
            max_in_flight: Some(MAX_MAX_IN_FLIGHT),
            heartbeat_ms: Some(MAX_HEARTBEAT_MS),
            ..StreamQuery::default()
        }
        .settings()
        .expect("in range");
        assert_eq!(settings.max_in_flight, MAX_MAX_IN_FLIGHT);
        assert_eq!(settings.heartbeat, Duration::from_millis(MAX_HEARTBEAT_MS));
    }
}
