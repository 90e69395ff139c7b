//! Who owns a control entry of a partition's log: the one place that splits the kind byte,
//! the first byte of every entry, into disjoint ranges, so each replay picks its own entries
//! and steps over the others without decoding them.
//!
//! ```text
//!   1..=63    subscription state   (crate::subscription::events)
//!   64..=127  the delay schedule   (crate::schedule::events)
//!   0, 128..  nobody: an entry with such a kind is corrupt
//! ```

use std::ops::RangeInclusive;

/// Kind bytes of subscription events.
pub const SUBSCRIPTION_KINDS: RangeInclusive<u8> = 1..=63;
/// Kind bytes of schedule events.
pub const SCHEDULE_KINDS: RangeInclusive<u8> = 64..=127;

/// The layer a control entry belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlOwner {
    /// Acks, nacks, seeks, redrives: [`crate::subscription::events::SubscriptionEvent`].
    Subscription,
    /// Delayed messages scheduled and cancelled: [`crate::schedule::ScheduleEvent`].
    Schedule,
}

/// The owner of `entry` by its kind byte; `None` for an empty entry or a kind in no range.
pub fn owner(entry: &[u8]) -> Option<ControlOwner> {
    let kind = *entry.first()?;
    if SUBSCRIPTION_KINDS.contains(&kind) {
        Some(ControlOwner::Subscription)
    } else if SCHEDULE_KINDS.contains(&kind) {
        Some(ControlOwner::Schedule)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_byte_has_at_most_one_owner_and_the_edges_are_where_the_table_says() {
        assert_eq!(owner(&[]), None);
        assert_eq!(owner(&[0]), None);
        assert_eq!(owner(&[1]), Some(ControlOwner::Subscription));
        assert_eq!(owner(&[63]), Some(ControlOwner::Subscription));
        assert_eq!(owner(&[64]), Some(ControlOwner::Schedule));
        assert_eq!(owner(&[127]), Some(ControlOwner::Schedule));
        assert_eq!(owner(&[128]), None);
        assert_eq!(owner(&[255]), None);
    }
}
