//! An in-memory network for Raft groups in one process: every RPC goes through the real
//! codec and a node's `RaftGroups`, and any node can be cut off from all others, made
//! deaf-mute (it takes every RPC but its answers are lost), or paused: every RPC to or from
//! it waits until it is resumed, then is delivered (its sender may have given up by then),
//! as the kernel buffers a SIGSTOPped process's connections. Shared by the `raft`,
//! `cluster` and `failpoints` binaries.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use broker_core::raft::{
    GroupId, RaftGroups, Rpc, RpcCall, RpcHandler, Transport, TransportError, TransportFuture,
};

/// Every node's RPC handler, which nodes are cut off from all others, and which nodes' answers
/// are lost (they still handle what they are sent), and which nodes are paused; and, when
/// `appends` is `Some`, when each append was sent and for which group.
#[derive(Default)]
pub struct Net {
    pub nodes: Mutex<BTreeMap<u64, Arc<RaftGroups>>>,
    pub cut: Mutex<BTreeSet<u64>>,
    pub mute: Mutex<BTreeSet<u64>>,
    pub paused: Mutex<BTreeSet<u64>>,
    pub appends: Mutex<Option<Vec<(GroupId, Instant)>>>,
}

/// How often an RPC held by a pause looks whether its nodes were resumed.
const PAUSE_POLL: Duration = Duration::from_millis(5);

impl Net {
    fn involves_paused(&self, a: u64, b: u64) -> bool {
        let paused = self.paused.lock().expect("lock");
        paused.contains(&a) || paused.contains(&b)
    }

    /// Holds an RPC between `from` and `to` until neither is paused, then hands it to `to`'s
    /// handler as it is then (none: the node went down meanwhile); the answer goes to
    /// whoever still waits for it.
    fn deliver_after_pause(
        self: &Arc<Self>,
        from: u64,
        to: u64,
        call: RpcCall,
    ) -> tokio::sync::oneshot::Receiver<Result<bytes::Bytes, String>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let net = Arc::clone(self);
        tokio::spawn(async move {
            while net.involves_paused(from, to) {
                tokio::time::sleep(PAUSE_POLL).await;
            }
            let handler = net.nodes.lock().expect("lock").get(&to).cloned();
            let answer = match handler {
                Some(h) => h
                    .handle(call.group, call.rpc, call.body)
                    .await
                    .map_err(|e| e.to_string()),
                None => Err("down".to_string()),
            };
            let _ = tx.send(answer);
        });
        rx
    }
}

/// One node's side of the network.
pub struct NodeTransport {
    pub me: u64,
    pub net: Arc<Net>,
}

impl Transport for NodeTransport {
    fn call(&self, target: u64, call: RpcCall) -> TransportFuture {
        if call.rpc == Rpc::Append
            && let Some(appends) = self.net.appends.lock().expect("lock").as_mut()
        {
            appends.push((call.group.clone(), Instant::now()));
        }
        if self.net.involves_paused(self.me, target) {
            let timeout = call.timeout;
            let answer = self.net.deliver_after_pause(self.me, target, call);
            return Box::pin(async move {
                match tokio::time::timeout(timeout, answer).await {
                    Ok(Ok(Ok(answer))) => Ok(answer),
                    Ok(Ok(Err(reason))) => Err(TransportError::Refused {
                        node: target,
                        status: 0,
                        reason,
                    }),
                    Ok(Err(_)) => Err(TransportError::Unreachable {
                        node: target,
                        reason: "the held call was dropped".into(),
                    }),
                    Err(_) => Err(TransportError::Timeout {
                        node: target,
                        ms: timeout.as_millis() as u64,
                    }),
                }
            });
        }
        let cut = self.net.cut.lock().expect("lock");
        let reachable = !cut.contains(&self.me) && !cut.contains(&target);
        drop(cut);
        let mute = self.net.mute.lock().expect("lock").contains(&target);
        let handler = self.net.nodes.lock().expect("lock").get(&target).cloned();
        Box::pin(async move {
            let unreachable = |reason: &str| TransportError::Unreachable {
                node: target,
                reason: reason.into(),
            };
            let handler = match (reachable, handler) {
                (true, Some(handler)) => handler,
                (false, _) => return Err(unreachable("cut off")),
                (true, None) => return Err(unreachable("down")),
            };
            let ms = call.timeout.as_millis() as u64;
            match tokio::time::timeout(
                call.timeout,
                handler.handle(call.group, call.rpc, call.body),
            )
            .await
            {
                Ok(Ok(_)) if mute => Err(unreachable("its answer was lost")),
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(e)) => Err(TransportError::Refused {
                    node: target,
                    status: 0,
                    reason: e.to_string(),
                }),
                Err(_) => Err(TransportError::Timeout { node: target, ms }),
            }
        })
    }
}
