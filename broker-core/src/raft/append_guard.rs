//! At most one append carrying entries per group with openraft at a time on a follower
//! ([`APPENDS_IN_FLIGHT`]).

use std::sync::Arc;
use std::time::Instant;

use openraft::Raft;
use openraft::raft::AppendEntriesRequest;
use tokio::sync::Semaphore;

use super::codec::AppendAnswer;
use super::transport::{GroupId, RpcError};
use super::types::TypeConfig;
use crate::telemetry::{self, WriteStage};

/// Appends carrying entries one group's Raft takes from its leader at a time; another that
/// arrives meanwhile is refused ([`RpcError::Busy`]) and the leader backs off
/// ([`super::network::BUSY_BACKOFF_MS`]). openraft gives an append the heartbeat interval
/// ([`super::groups::HEARTBEAT_MS`]) and sends the same entries again when it misses it,
/// while the first is still queued at the follower (a dropped call does not leave openraft's
/// unbounded queue):
/// on a busy disk every append missed it, each was queued again behind an fsync, and with
/// dozens of groups the nodes grew to 0.5–1.8 GB and votes waited behind them until
/// elections churned (three `loadtest/run --cluster` runs stopped in round 3); with one at a
/// time the same run finished with every node under 80 MB. Heartbeats (no entries) always
/// pass: they are small, and a follower must hear its leader.
pub const APPENDS_IN_FLIGHT: usize = 1;

/// Hands `request` to `raft`, at most [`APPENDS_IN_FLIGHT`] carrying entries at a time.
pub(super) async fn append_guarded(
    group: &GroupId,
    raft: Raft<TypeConfig>,
    appending: &Arc<Semaphore>,
    request: AppendEntriesRequest<TypeConfig>,
) -> std::result::Result<AppendAnswer, RpcError> {
    let carries_entries = !request.entries.is_empty();
    let arrived = Instant::now();
    let append = async move { raft.append_entries(request).await };
    let answer = run_guarded(group, appending, carries_entries, append).await;
    match &answer {
        Ok(_) if carries_entries && matches!(group, GroupId::Partition { .. }) => {
            let seconds = arrived.elapsed().as_secs_f64();
            telemetry::write_stage(WriteStage::FollowerAppend, seconds);
        }
        Err(RpcError::Busy(_)) => telemetry::append_refused_busy(),
        _ => {}
    }
    answer
}

/// Runs `work` at once when `guarded` is false; otherwise only if `guard` has a
/// permit left (else [`RpcError::Busy`]), as its own task holding the permit until `work`
/// ends: a caller that gives up (the leader's deadline) must not free the permit while the
/// append it handed over is still queued in openraft.
async fn run_guarded<T: Send + 'static>(
    group: &GroupId,
    guard: &Arc<Semaphore>,
    guarded: bool,
    work: impl Future<Output = T> + Send + 'static,
) -> std::result::Result<T, RpcError> {
    if !guarded {
        return Ok(work.await);
    }
    let Ok(permit) = Arc::clone(guard).try_acquire_owned() else {
        return Err(RpcError::Busy(group.to_path()));
    };
    let task = tokio::spawn(async move {
        let _permit = permit;
        work.await
    });
    task.await.map_err(|e| RpcError::Unavailable {
        group: group.to_path(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::{Semaphore, oneshot};

    use super::{APPENDS_IN_FLIGHT, run_guarded};
    use crate::raft::transport::{GroupId, RpcError};

    fn group() -> GroupId {
        GroupId::Partition {
            topic: "orders".into(),
            partition: 0,
        }
    }

    #[tokio::test]
    async fn a_second_append_is_refused_until_the_first_one_ends_even_if_its_caller_gave_up() {
        let guard = Arc::new(Semaphore::new(APPENDS_IN_FLIGHT));
        let (finish, finished) = oneshot::channel::<()>();
        let (started_tx, started) = oneshot::channel::<()>();
        let first = tokio::spawn({
            let guard = Arc::clone(&guard);
            async move {
                let work = async move {
                    let _ = started_tx.send(());
                    let _ = finished.await;
                    7
                };
                run_guarded(&group(), &guard, true, work).await
            }
        });
        started.await.expect("the first append started");

        let second = run_guarded(&group(), &guard, true, async { 8 }).await;
        assert_eq!(second, Err(RpcError::Busy("orders:0".into())));
        let heartbeat = run_guarded(&group(), &guard, false, async { 9 }).await;
        assert_eq!(
            heartbeat,
            Ok(9),
            "a heartbeat passes while an append is in flight"
        );

        // The leader's deadline passes: its call is dropped, the append is still queued.
        first.abort();
        assert!(first.await.is_err_and(|e| e.is_cancelled()));
        let while_queued = run_guarded(&group(), &guard, true, async { 10 }).await;
        assert_eq!(while_queued, Err(RpcError::Busy("orders:0".into())));

        finish.send(()).expect("the append is still running");
        let permit = guard
            .acquire()
            .await
            .expect("the guard is freed once it ends");
        drop(permit);
        let next = run_guarded(&group(), &guard, true, async { 11 }).await;
        assert_eq!(next, Ok(11));
    }
}
