//! The webhook sender: [`Outbox`], the bounded queue the evaluator pushes events into
//! (never waiting), and [`send_loop`], the task that posts them, signed, with
//! [`WEBHOOK_TIMEOUT_MS`] per attempt, no redirects, and retries by [`RetrySchedule`].

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use broker_core::clock::steady_ms;
use broker_core::sync::lock;
use metrics::counter;
use reqwest::Url;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::delivery_queue::{DELIVERY_QUEUE_CAPACITY, DeliveryQueue};
use super::delivery_schedule::{NextAttempt, RetrySchedule, WEBHOOK_TIMEOUT_MS};
use super::signature::{SIGNATURE_HEADER, WebhookSigner};
use crate::governance::metrics::ALERT_DELIVERIES;

/// Most posts in progress at once: a few receivers that hang hold a slot each for up to
/// [`WEBHOOK_TIMEOUT_MS`], and the others still get their events.
pub(crate) const MAX_CONCURRENT_DELIVERIES: usize = 16;
/// Longest the sender sleeps with nothing due, in ms: it is woken for new events, so this
/// only bounds how late a shutdown or a clock oddity is noticed.
const IDLE_WAKE_MS: u64 = 1_000;

/// One event on its way to a webhook.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The rule it is about (for the log).
    pub rule: String,
    /// Where it goes.
    pub url: Url,
    /// The JSON body, signed as it is.
    pub body: Vec<u8>,
    /// The key of its signature.
    pub signer: WebhookSigner,
    /// Steady ms at which the event happened.
    pub created_ms: u64,
    /// Attempts that failed so far.
    pub failed: u32,
    /// Steady ms before which it is not tried (again).
    pub due_ms: u64,
}

/// The bounded queue between the evaluator and the sender.
#[derive(Debug, Default)]
pub struct Outbox {
    queue: Mutex<DeliveryQueue<Pending>>,
    wake: Notify,
}

impl Outbox {
    /// Queues an event without waiting; when the queue is full the oldest event is dropped,
    /// counted (`outcome="dropped"`) and logged.
    pub fn push(&self, pending: Pending) {
        let dropped = lock(&self.queue).push(pending);
        if let Some(dropped) = dropped {
            counter!(ALERT_DELIVERIES, "outcome" => "dropped").increment(1);
            tracing::warn!(
                rule = dropped.rule,
                "alert delivery queue full: dropped its oldest event"
            );
        }
        self.wake.notify_one();
    }

    /// Events waiting for the sender.
    pub fn len(&self) -> usize {
        lock(&self.queue).len()
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn pop(&self) -> Option<Pending> {
        lock(&self.queue).pop()
    }
}

/// The HTTP client of the sender: [`WEBHOOK_TIMEOUT_MS`] per post, no redirects (a webhook
/// that redirects could lead the server past the allow-list).
pub(crate) fn webhook_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(Duration::from_millis(WEBHOOK_TIMEOUT_MS))
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

/// Posts what `outbox` receives until `stop` turns true: at most
/// [`MAX_CONCURRENT_DELIVERIES`] at once, failed ones again per `schedule` (at most
/// [`DELIVERY_QUEUE_CAPACITY`] waiting to be retried; past that the oldest is dropped).
pub(crate) async fn send_loop(
    outbox: std::sync::Arc<Outbox>,
    client: reqwest::Client,
    schedule: RetrySchedule,
    mut stop: watch::Receiver<bool>,
) {
    let mut retries: Vec<Pending> = Vec::new();
    let mut posting: JoinSet<(Pending, bool)> = JoinSet::new();
    loop {
        let now = steady_ms();
        while posting.len() < MAX_CONCURRENT_DELIVERIES {
            let Some(pending) = take_due(&mut retries, now).or_else(|| outbox.pop()) else {
                break;
            };
            let client = client.clone();
            posting.spawn(async move {
                let delivered = post(&client, &pending).await;
                (pending, delivered)
            });
        }
        let next_due = retries.iter().map(|p| p.due_ms).min();
        let sleep_ms = next_due.map_or(IDLE_WAKE_MS, |due| {
            due.saturating_sub(now).min(IDLE_WAKE_MS)
        });
        tokio::select! {
            _ = stop.changed() => break,
            () = outbox.wake.notified() => {}
            Some(done) = posting.join_next(), if !posting.is_empty() => {
                if let Ok((pending, delivered)) = done {
                    settle(pending, delivered, &schedule, &mut retries);
                }
            }
            () = tokio::time::sleep(Duration::from_millis(sleep_ms.max(1))) => {}
        }
    }
    posting.abort_all();
}

/// The retry that is due first, if one is due at `now`.
fn take_due(retries: &mut Vec<Pending>, now: u64) -> Option<Pending> {
    let (index, _) = retries
        .iter()
        .enumerate()
        .filter(|(_, p)| p.due_ms <= now)
        .min_by_key(|(_, p)| p.due_ms)?;
    Some(retries.swap_remove(index))
}

/// Counts a finished attempt, and keeps a failed one for its retry.
fn settle(
    mut pending: Pending,
    delivered: bool,
    schedule: &RetrySchedule,
    retries: &mut Vec<Pending>,
) {
    if delivered {
        counter!(ALERT_DELIVERIES, "outcome" => "delivered").increment(1);
        return;
    }
    counter!(ALERT_DELIVERIES, "outcome" => "failed").increment(1);
    pending.failed += 1;
    let now = steady_ms();
    match schedule.after_failure(
        pending.failed,
        pending.created_ms,
        now,
        &mut rand::thread_rng(),
    ) {
        NextAttempt::RetryAt(at_ms) => {
            pending.due_ms = at_ms;
            if retries.len() >= DELIVERY_QUEUE_CAPACITY.get()
                && let Some((oldest, _)) =
                    retries.iter().enumerate().min_by_key(|(_, p)| p.created_ms)
            {
                let dropped = retries.swap_remove(oldest);
                counter!(ALERT_DELIVERIES, "outcome" => "dropped").increment(1);
                tracing::warn!(
                    rule = dropped.rule,
                    "too many alert events waiting to be retried: dropped the oldest"
                );
            }
            retries.push(pending);
        }
        NextAttempt::GiveUp(why) => {
            counter!(ALERT_DELIVERIES, "outcome" => "gave_up").increment(1);
            tracing::warn!(rule = pending.rule, url = %pending.url, ?why, "gave up posting an alert event");
        }
    }
}

/// One signed post; whether the receiver answered 2xx.
async fn post(client: &reqwest::Client, pending: &Pending) -> bool {
    let unix_secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let signature = pending.signer.sign(unix_secs, &pending.body);
    let sent = client
        .post(pending.url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, signature)
        .body(pending.body.clone())
        .send()
        .await;
    match sent {
        Ok(response) if response.status().is_success() => true,
        Ok(response) => {
            tracing::info!(rule = pending.rule, url = %pending.url, status = %response.status(), "an alert webhook refused an event");
            false
        }
        Err(error) => {
            tracing::info!(rule = pending.rule, url = %pending.url, %error, "posting an alert event failed");
            false
        }
    }
}
