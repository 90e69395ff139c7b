//! Lost values: acknowledged, yet absent from every node's drain of their partition; and where in
//! the log each one was lost (prefix, middle, postfix).

use std::collections::HashMap;

use serde::Serialize;

use crate::event::{Offset, Partition, Produce};
use crate::history::History;
use crate::index::{Presence, acked_produces};
use crate::offenders::Offenders;

/// An acknowledged value no drain found, with the position its reply named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LostValue {
    /// The value.
    pub value: String,
    /// The partition its ok reply named, if it named one.
    pub partition: Option<Partition>,
    /// The offset its ok reply named, if it named one.
    pub offset: Option<Offset>,
}

/// Lost values sorted by where their acknowledged offset falls among the drained offsets of their
/// partition (over all nodes).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LostClasses {
    /// Before the first drained offset: the log lost its beginning.
    pub prefix: Offenders<LostValue>,
    /// Between the first and last drained offsets: a hole before a later record that survived.
    pub middle: Offenders<LostValue>,
    /// After the last drained offset (or the partition drained empty): the tail was lost.
    pub postfix: Offenders<LostValue>,
    /// The reply named no position, so it cannot be placed.
    pub unplaced: Offenders<LostValue>,
}

/// The acknowledged operations whose value no node holds in the partition their reply named (in
/// any partition when the reply named none), in history order.
pub(crate) fn lost_produces<'h>(history: &'h History, presence: &Presence<'_>) -> Vec<&'h Produce> {
    acked_produces(history)
        .into_iter()
        .filter(|produce| !presence.in_partition(produce.partition, &produce.value))
        .collect()
}

/// The lost value `produce` describes.
pub(crate) fn lost_value(produce: &Produce) -> LostValue {
    LostValue {
        value: produce.value.clone(),
        partition: produce.partition,
        offset: produce.offset,
    }
}

/// Classifies every lost value of `history`.
pub fn classify(history: &History) -> LostClasses {
    let presence = Presence::of(history);
    let ranges = drained_ranges(history);
    let mut classes = LostClasses::default();
    for produce in lost_produces(history, &presence) {
        let class = match (produce.partition, produce.offset) {
            (Some(partition), Some(offset)) => match ranges.get(&partition) {
                Some(&(first, _)) if offset < first => &mut classes.prefix,
                Some(&(_, last)) if offset <= last => &mut classes.middle,
                _ => &mut classes.postfix,
            },
            _ => &mut classes.unplaced,
        };
        class.push(lost_value(produce));
    }
    classes
}

/// The lowest and highest drained offset of each partition over all nodes.
fn drained_ranges(history: &History) -> HashMap<Partition, (Offset, Offset)> {
    let mut ranges: HashMap<Partition, (Offset, Offset)> = HashMap::new();
    for drain in &history.drains {
        let range = ranges
            .entry(drain.partition)
            .or_insert((drain.offset, drain.offset));
        range.0 = range.0.min(drain.offset);
        range.1 = range.1.max(drain.offset);
    }
    ranges
}
