//! Asking another node (a partition's leader) for figures only it has live: a `GET` with
//! the client's credentials and `Wharf-Forwarded`, its JSON answer parsed. Used by
//! [`crate::fanout::topic_stats`] and [`crate::fanout::subscription_figures`]; an answer that does
//! not come is `None` (logged), and the caller keeps this node's own figures.

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use broker_core::cluster_node::ClusterNode;
use serde::de::DeserializeOwned;

use crate::fanout::forward::call;

/// `GET http://<leader's public address><path>` with the client's `headers` (plus `extra`,
/// if any), the answer parsed as `T`; `None` if the leader has no known address, cannot be
/// asked, refuses, or answers something else. `what` names the figures in the log.
pub(crate) async fn ask_leader<T: DeserializeOwned>(
    cluster: &ClusterNode,
    headers: &HeaderMap,
    extra: Option<(&'static str, &'static str)>,
    leader: u64,
    path: &str,
    what: &str,
) -> Option<T> {
    let address = cluster.public_addr(leader)?;
    let url = format!("http://{address}{path}");
    let marked;
    let headers = match extra {
        Some((name, value)) => {
            let mut with = headers.clone();
            with.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
            marked = with;
            &marked
        }
        None => headers,
    };
    match call(&url, Method::GET, headers, Bytes::new(), cluster.node_id()).await {
        Ok((StatusCode::OK, _, body)) => match serde_json::from_slice(&body) {
            Ok(answer) => Some(answer),
            Err(error) => {
                tracing::debug!(leader, %error, what, "a leader's answer did not parse");
                None
            }
        },
        Ok((status, _, _)) => {
            tracing::debug!(leader, %status, what, "a leader refused");
            None
        }
        Err(error) => {
            tracing::debug!(leader, %error, what, "a leader could not be asked");
            None
        }
    }
}
