//! An in-memory network for Raft groups in one process: every RPC goes through the real
//! codec and a node's `RaftGroups`, and any node can be cut off from all others, or made
//! deaf-mute: it takes every RPC but its answers are lost.
#![allow(dead_code)]

pub mod nodes;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use broker_core::raft::{
    RaftGroups, RpcCall, RpcHandler, Transport, TransportError, TransportFuture,
};

/// Every node's RPC handler, which nodes are cut off from all others, and which nodes' answers
/// are lost (they still handle what they are sent).
#[derive(Default)]
pub struct Net {
    pub nodes: Mutex<BTreeMap<u64, Arc<RaftGroups>>>,
    pub cut: Mutex<BTreeSet<u64>>,
    pub mute: Mutex<BTreeSet<u64>>,
}

/// One node's side of the network.
pub struct NodeTransport {
    pub me: u64,
    pub net: Arc<Net>,
}

impl Transport for NodeTransport {
    fn call(&self, target: u64, call: RpcCall) -> TransportFuture {
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
