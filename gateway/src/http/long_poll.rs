//! Long-polls that a draining server can end without cancelling a broker call.
//!
//! A long-poll is split into broker waits of at most [`LONG_POLL_SLICE_MS`]; between them the
//! gateway checks whether the server is draining. No broker future is ever dropped half-way
//! (a receive may have leased messages before it returns), and a graceful shutdown waits at
//! most one slice for idle long-polls.

use std::future::Future;
use std::time::Duration;

use broker_core::BrokerError;
use broker_core::limits::MAX_WAIT_MS;
use tokio::time::Instant;

use crate::app::AppState;

/// Longest single broker wait inside a long-poll, in milliseconds: how long a graceful
/// shutdown may wait for an idle long-poll, and one extra broker call per second per idle
/// poller, which is cheap.
pub(crate) const LONG_POLL_SLICE_MS: u64 = 1_000;

/// Calls `attempt(wait_ms)` with waits of at most one slice until it returns something that
/// `has_result` accepts, `wait_ms` has passed, or the server drains. A `wait_ms` beyond the
/// broker's limit goes to the broker unchanged, so the broker's own range check answers it.
pub(crate) async fn long_poll<T, Fut>(
    state: &AppState,
    wait_ms: u64,
    mut attempt: impl FnMut(u64) -> Fut,
    has_result: impl Fn(&T) -> bool,
) -> Result<T, BrokerError>
where
    Fut: Future<Output = Result<T, BrokerError>>,
{
    if wait_ms > MAX_WAIT_MS {
        return attempt(wait_ms).await;
    }
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let left_ms = u64::try_from(left.as_millis()).unwrap_or(u64::MAX);
        let result = attempt(left_ms.min(LONG_POLL_SLICE_MS)).await?;
        if has_result(&result) || left_ms <= LONG_POLL_SLICE_MS || state.is_draining() {
            return Ok(result);
        }
    }
}
