//! Idempotence: with [`Run::exactly_once_ids`](crate::event::Run::exactly_once_ids), every
//! value is a client `id` its producer retried unchanged until a 200, and the topic promised to
//! store each id once within its dedup window. A value one node holds at two positions (two
//! offsets of one partition, or two partitions) is then an id stored twice: an anomaly, not an
//! at-least-once duplicate. Also counted: the values retried (attempted more than once), and
//! the `ok` replies marked `"duplicate": true` (a retry answered with the first result), which
//! are only reported.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;

use crate::event::{NodeId, Offset, Outcome, Partition};
use crate::history::History;
use crate::offenders::Offenders;

/// What a run's ids show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Idempotence {
    /// Whether the run header promised each id stored once: `stored_twice` is an anomaly then.
    pub enforced: bool,
    /// Distinct values the drains found.
    pub stored: u64,
    /// Values some node holds at two or more positions.
    pub stored_twice: Offenders<StoredTwice>,
    /// Values produced in more than one attempt.
    pub retried: u64,
    /// Values whose `ok` reply said `"duplicate": true`.
    pub duplicate_replies: Offenders<String>,
}

/// A value one node holds at several positions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredTwice {
    /// The value (its client id).
    pub value: String,
    /// The first node (in id order) holding it more than once.
    pub node: NodeId,
    /// Its positions there, (partition, offset) ascending.
    pub positions: Vec<(Partition, Offset)>,
}

/// Counts `history`'s ids stored twice, retried values and duplicate replies.
pub fn check(history: &History) -> Idempotence {
    let enforced = history.run.as_ref().is_some_and(|run| run.exactly_once_ids);
    let mut positions: BTreeMap<(&str, NodeId), BTreeSet<(Partition, Offset)>> = BTreeMap::new();
    let mut values: HashSet<&str> = HashSet::new();
    for drain in &history.drains {
        values.insert(&drain.value);
        positions
            .entry((drain.value.as_str(), drain.node))
            .or_default()
            .insert((drain.partition, drain.offset));
    }
    let mut seen = HashSet::new();
    let mut stored_twice = Offenders::default();
    for ((value, node), at) in positions {
        if at.len() > 1 && seen.insert(value) {
            stored_twice.push(StoredTwice {
                value: value.to_owned(),
                node,
                positions: at.into_iter().collect(),
            });
        }
    }
    let mut attempts: HashMap<&str, u64> = HashMap::new();
    for produce in &history.produces {
        *attempts.entry(&produce.value).or_default() += 1;
    }
    let mut replied = HashSet::new();
    let duplicate_replies = history
        .produces
        .iter()
        .filter(|p| p.outcome == Outcome::Ok && p.duplicate && replied.insert(p.value.as_str()))
        .map(|p| p.value.clone())
        .collect();
    Idempotence {
        enforced,
        stored: values.len() as u64,
        stored_twice,
        retried: attempts.values().filter(|&&n| n > 1).count() as u64,
        duplicate_replies,
    }
}

impl Idempotence {
    /// Ids stored twice, when the run promised once: the count the verdict judges.
    pub fn anomalies(&self) -> u64 {
        if self.enforced {
            self.stored_twice.count
        } else {
            0
        }
    }

    /// Why a run that promised once proves nothing: no value was ever retried.
    pub fn problems(&self) -> Vec<String> {
        if self.enforced && self.retried == 0 {
            vec!["no produce was retried, so no id was put to the test".to_owned()]
        } else {
            Vec::new()
        }
    }
}
