//! Any node serves any request: in a cluster, a request this node answers `not_leader`
//! (a partition, or the cluster metadata, led elsewhere) is sent on to the leader the error
//! names, and the leader's answer goes back to the client.
//!
//! The request is checked here first (the edge: auth, limits), so only an allowed request
//! travels; the leader checks it again with the same credentials. The target is always the
//! leader's public address from the cluster metadata, never anything the request says. A
//! forwarded request carries `Wharf-Forwarded: <this node>` and is never forwarded again
//! (one hop): a second `not_leader` (leadership moved meanwhile) reaches the client, which
//! retries after `Retry-After`. A request taken from a client also carries
//! `Wharf-Client-Address` ([`CLIENT_ADDRESS_HEADER`]), so the node that serves it can record
//! where it came from; that node believes it only where it believes `Wharf-Forwarded`
//! ([`crate::http::produce_origin`]). Forwarding has a connect timeout and an overall timeout; a
//! leader that cannot be reached leaves the original `not_leader` answer (nothing was sent),
//! one that took the request and gave no answer makes it 503 `replication_timeout` (the
//! outcome is unknown). A stream (`…/stream`, Server-Sent Events) is never forwarded: it
//! gathers from every partition's leader instead
//! ([`crate::fanout::gather::leaders_to_stream_from`]).
//!
//! An offset read may name a replica in this node's zone besides the leader
//! ([`NearReplica`]): it goes there first, and to the leader only when that replica did not
//! serve it (it is not in sync, cannot be reached, or answered anything but a page). A read
//! changes nothing, so asking twice is safe; each ask is still one hop.

use std::net::{IpAddr, SocketAddr};
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Response};
use axum::middleware::Next;
use axum::response::IntoResponse;
use broker_core::BrokerError;

use crate::app::AppState;
use crate::http::client_addr::{IpRange, client_address};
use crate::http::problem::ApiError;

/// The header marking a forwarded request, naming the node that forwarded it.
pub const FORWARDED_HEADER: &str = "wharf-forwarded";
/// The header naming the address of the client the forwarding node took the request from
/// (as [`client_address`] found it there: the connection's peer, or behind a trusted proxy
/// the address it forwarded for). Set by this node on every request it takes from a client,
/// replacing any the client sent.
pub const CLIENT_ADDRESS_HEADER: &str = "wharf-client-address";
/// Longest wait for a connection to a leader on the same network.
pub const FORWARD_CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// Longest a forwarded request may take: a receive long-polls for up to 60 s, plus margin.
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(75);

/// The leader a `not_leader` answer names (none during an election), for [`forward`].
#[derive(Debug, Clone, Copy)]
pub struct LeaderHint(pub Option<u64>);

/// A replica in this node's zone that may serve a refused offset read (as an in-sync
/// follower), to ask before the leader, for [`forward`].
#[derive(Debug, Clone, Copy)]
pub struct NearReplica(pub u64);

/// Headers that describe one connection, not the request (RFC 9110 §7.6.1), and those the
/// first node already judged (`Origin`, `Sec-Fetch-*`): none travels to the leader.
const NOT_FORWARDED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
    "origin",
    "sec-fetch-site",
    "sec-fetch-mode",
    "sec-fetch-dest",
    FORWARDED_HEADER,
];

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(FORWARD_CONNECT_TIMEOUT)
            .timeout(FORWARD_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
}

/// The middleware: runs the request here; on `not_leader` naming another node, sends it
/// there instead (once).
pub async fn forward(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response<Body> {
    let Some(cluster) = state.cluster.clone() else {
        return next.run(request).await;
    };
    if request.headers().contains_key(FORWARDED_HEADER) {
        return next.run(request).await;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    let (mut parts, body) = request.into_parts();
    mark_client_address(
        &mut parts.headers,
        peer,
        &state.edge.settings.trusted_proxies,
    );
    let bytes = match axum::body::to_bytes(body, state.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let too_large = error
                .into_inner()
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            let refusal = match too_large {
                true => ApiError::BodyTooLarge,
                false => ApiError::invalid("the request body could not be read".to_owned()),
            };
            return refusal.into_response();
        }
    };
    let (method, uri, headers) = (
        parts.method.clone(),
        parts.uri.clone(),
        parts.headers.clone(),
    );
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    let near = response.extensions().get::<NearReplica>().copied();
    if let Some(NearReplica(node)) = near
        && node != cluster.node_id()
        && let Some(address) = cluster.public_addr(node)
    {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let url = format!("http://{address}{path}");
        let sent = send(
            &url,
            method.clone(),
            &headers,
            bytes.clone(),
            cluster.node_id(),
        )
        .await;
        match sent {
            Ok(answer) if answer.status().is_success() => return answer,
            Ok(answer) => {
                tracing::debug!(status = %answer.status(), node, "a near replica did not serve a read")
            }
            Err(error) => tracing::debug!(%error, node, "a near replica could not be asked"),
        }
    }
    let Some(LeaderHint(Some(leader))) = response.extensions().get::<LeaderHint>().copied() else {
        return response;
    };
    // A stream (SSE) never ends, and forwarding reads whole answers: a stream gathers from
    // the leaders itself, and one that was forwarded here (one hop) answers as it is.
    if leader == cluster.node_id() || uri.path().ends_with("/stream") {
        return response;
    }
    let Some(address) = cluster.public_addr(leader) else {
        return response;
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("http://{address}{path}");
    match send(&url, method, &headers, bytes, cluster.node_id()).await {
        Ok(answer) => answer,
        // Never sent: the original `not_leader` stands (nothing was stored).
        Err(error) if error.is_connect() => {
            tracing::debug!(%error, leader, "the leader could not be reached");
            response
        }
        // Sent, but no answer: the leader may have done it.
        Err(error) => {
            tracing::debug!(%error, leader, "the leader did not answer a forwarded request");
            ApiError::from(BrokerError::ReplicationTimeout {
                what: format!("the request forwarded to node {leader}"),
                ms: u64::try_from(FORWARD_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            })
            .into_response()
        }
    }
}

/// Puts the address of the client this node took a request from (over a connection from
/// `peer`) in [`CLIENT_ADDRESS_HEADER`], replacing any the client sent, so every call that
/// sends the client's headers on to another node (a forward, the produce scatter, the
/// receive gather) says where the request came from.
fn mark_client_address(headers: &mut HeaderMap, peer: Option<IpAddr>, trusted: &[IpRange]) {
    headers.remove(CLIENT_ADDRESS_HEADER);
    let address = peer.map(|peer| client_address(peer, headers, trusted));
    if let Some(Ok(value)) = address.map(|a| HeaderValue::from_str(&a.to_string())) {
        headers.insert(HeaderName::from_static(CLIENT_ADDRESS_HEADER), value);
    }
}

/// Sends a request on to node `me`'s peer at `url` with the client's headers (less those in
/// [`NOT_FORWARDED`]) and `Wharf-Forwarded`, and reads the whole answer: its status, headers
/// (less those in [`NOT_FORWARDED`]) and body.
pub(crate) async fn call(
    url: &str,
    method: axum::http::Method,
    headers: &HeaderMap,
    body: Bytes,
    me: u64,
) -> Result<(axum::http::StatusCode, HeaderMap, Bytes), reqwest::Error> {
    let mut outgoing = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            outgoing.append(name.clone(), value.clone());
        }
    }
    outgoing.insert(
        HeaderName::from_static(FORWARDED_HEADER),
        HeaderValue::from(me),
    );
    let answer = client()
        .request(method, url)
        .headers(outgoing)
        .body(body)
        .send()
        .await?;
    let status = answer.status();
    let mut back = HeaderMap::new();
    for (name, value) in answer.headers() {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            back.append(name.clone(), value.clone());
        }
    }
    let body = answer.bytes().await?;
    Ok((status, back, body))
}

async fn send(
    url: &str,
    method: axum::http::Method,
    headers: &HeaderMap,
    body: Bytes,
    me: u64,
) -> Result<Response<Body>, reqwest::Error> {
    let (status, back, body) = call(url, method, headers, body, me).await?;
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = back;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn the_client_address_sent_on_is_the_peers_and_replaces_the_clients_own() {
        let mut headers = HeaderMap::new();
        headers.insert(CLIENT_ADDRESS_HEADER, HeaderValue::from_static("192.0.2.7"));
        mark_client_address(&mut headers, Some(ip("198.51.100.1")), &[]);
        let sent: Vec<_> = headers.get_all(CLIENT_ADDRESS_HEADER).iter().collect();
        assert_eq!(sent, [HeaderValue::from_static("198.51.100.1")]);
    }

    #[test]
    fn behind_a_trusted_proxy_the_client_address_sent_on_is_the_one_it_forwarded_for() {
        let trusted: Vec<IpRange> = vec!["10.0.0.0/8".parse().expect("a range")];
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.5"));
        mark_client_address(&mut headers, Some(ip("10.0.0.1")), &trusted);
        assert_eq!(
            headers.get(CLIENT_ADDRESS_HEADER),
            Some(&HeaderValue::from_static("203.0.113.5"))
        );
    }

    #[test]
    fn without_a_known_peer_no_client_address_is_sent_on_not_even_the_clients() {
        let mut headers = HeaderMap::new();
        headers.insert(CLIENT_ADDRESS_HEADER, HeaderValue::from_static("192.0.2.7"));
        mark_client_address(&mut headers, None, &[]);
        assert!(headers.get(CLIENT_ADDRESS_HEADER).is_none());
    }
}
