//! Client ids of the produces under way on one topic. A produce claims its batch's ids before
//! it writes and ends each claim with the id's first result once that is in the dedup index
//! ([`crate::dedup::DedupIndex`]), or as failed. A produce of an id another one has claimed
//! waits for that claim to end instead of for a turn on the whole topic: produces of
//! different ids write concurrently and share group commits, and concurrent produces of one
//! id store it once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::dedup::FirstResult;
use crate::sync::lock;

/// How a claim ended, as its waiters see it: `None` until it ends with a first result.
type Outcome = Option<FirstResult>;

/// The claimed ids of one topic.
#[derive(Debug, Default)]
pub struct InFlightIds {
    /// Held for map updates only, never across an await. Changed by single inserts and
    /// removes, so a panicked holder cannot leave it half-updated ([`crate::sync`]).
    ids: Mutex<HashMap<String, watch::Receiver<Outcome>>>,
}

/// An id another produce has claimed: wait for its claim to end with [`Busy::outcome`].
#[derive(Debug)]
pub struct Busy {
    /// The id.
    pub id: String,
    outcome: watch::Receiver<Outcome>,
}

/// Ids a produce claimed. Dropping it ends every claim: with the first result given to
/// [`Claims::resolve`], else as failed, so that a waiter produces the id itself.
#[derive(Debug)]
#[must_use = "the claims end when they are dropped"]
pub struct Claims {
    owner: Arc<InFlightIds>,
    ends: HashMap<String, watch::Sender<Outcome>>,
}

impl InFlightIds {
    /// Claims every id of `ids` or none: `Err` names one another produce has claimed.
    pub fn claim<'a>(
        self: &Arc<Self>,
        ids: impl Iterator<Item = &'a str> + Clone,
    ) -> Result<Claims, Busy> {
        let mut held = lock(&self.ids);
        if let Some((id, outcome)) = ids.clone().find_map(|id| held.get_key_value(id)) {
            return Err(Busy {
                id: id.clone(),
                outcome: outcome.clone(),
            });
        }
        let mut ends = HashMap::new();
        for id in ids {
            let (end, outcome) = watch::channel(None);
            held.insert(id.to_owned(), outcome);
            ends.insert(id.to_owned(), end);
        }
        Ok(Claims {
            owner: Arc::clone(self),
            ends,
        })
    }

    /// How many ids are claimed.
    pub fn len(&self) -> usize {
        lock(&self.ids).len()
    }

    /// Whether no id is claimed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Busy {
    /// The first result the claim ended with, or `None` if the claiming produce failed (or
    /// gave up): then the id is free to be claimed again.
    pub async fn outcome(mut self) -> Option<FirstResult> {
        let ended = self.outcome.wait_for(Option::is_some).await;
        ended.ok().and_then(|first| *first)
    }
}

impl Claims {
    /// Ends the claim of `id` with its first result, which the dedup index now holds. Ids not
    /// claimed here are ignored.
    pub fn resolve(&self, id: &str, first: FirstResult) {
        if let Some(end) = self.ends.get(id) {
            end.send_replace(Some(first));
        }
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        let mut held = lock(&self.owner.ids);
        for id in self.ends.keys() {
            held.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(offset: u64) -> FirstResult {
        FirstResult {
            produced_ms: 1,
            partition: 0,
            offset: Some(offset),
            deliver_at_ms: None,
        }
    }

    #[tokio::test]
    async fn a_waiter_gets_the_first_result_the_claim_ends_with() {
        let ids = Arc::new(InFlightIds::default());
        let claims = ids.claim(["a", "b"].into_iter()).expect("free");
        let busy = ids.claim(["c", "b"].into_iter()).expect_err("b is claimed");
        assert_eq!(busy.id, "b");
        assert!(ids.claim(["c"].into_iter()).is_ok(), "c was not claimed");
        claims.resolve("b", first(7));
        drop(claims);
        assert_eq!(busy.outcome().await, Some(first(7)));
        assert!(ids.is_empty());
    }

    #[tokio::test]
    async fn a_claim_dropped_without_a_result_frees_the_id_and_tells_waiters_it_failed() {
        let ids = Arc::new(InFlightIds::default());
        let claims = ids.claim(["a"].into_iter()).expect("free");
        let busy = ids.claim(["a"].into_iter()).expect_err("claimed");
        drop(claims);
        assert_eq!(busy.outcome().await, None);
        let _again = ids.claim(["a"].into_iter()).expect("free again");
        assert_eq!(ids.len(), 1);
    }
}
