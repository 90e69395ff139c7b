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

/// A control entry ended before one of its fields did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated;

/// Reads a control entry's fields in order, refusing any length past its end: the one reader
/// of both event codecs, whose decode errors each take [`Truncated`] in.
pub struct EntryReader<'a>(&'a [u8]);

impl<'a> EntryReader<'a> {
    /// A reader at the start of `entry`.
    pub fn new(entry: &'a [u8]) -> Self {
        EntryReader(entry)
    }

    /// The next `len` bytes.
    pub fn take(&mut self, len: usize) -> Result<&'a [u8], Truncated> {
        if len > self.0.len() {
            return Err(Truncated);
        }
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(head)
    }

    /// The next `N` bytes, as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        self.take(N)?.try_into().map_err(|_| Truncated)
    }

    /// The next byte.
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        Ok(self.array::<1>()?[0])
    }

    /// The next little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// The next little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// The bytes not read yet, without reading them.
    pub fn rest(&self) -> &'a [u8] {
        self.0
    }

    /// Whether every byte has been read.
    pub fn is_done(&self) -> bool {
        self.0.is_empty()
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
