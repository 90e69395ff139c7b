//! A budget of bytes held in memory: one count shared by everything that holds request or
//! answer bytes, which either takes a charge at once or refuses, never queues. Charges are
//! RAII ([`MemoryCharge`]): dropping one returns its bytes.
//!
//! The gateway charges request bodies and answers to it; a receive or offset read takes the
//! room for its answer through [`AnswerMemory`] right before it reads, so that a long-poll
//! that waits holds nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// The shared budget. Cloning shares it.
#[derive(Debug, Clone)]
pub struct MemoryBudget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    capacity: usize,
    used: AtomicUsize,
}

/// Bytes charged to a [`MemoryBudget`], returned when dropped.
#[derive(Debug)]
pub struct MemoryCharge {
    inner: Arc<Inner>,
    bytes: usize,
}

impl MemoryBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        MemoryBudget {
            inner: Arc::new(Inner {
                capacity,
                used: AtomicUsize::new(0),
            }),
        }
    }

    /// The budget's size in bytes.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// Bytes charged right now (may pass the capacity by what [`MemoryBudget::charge`] took).
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// Bytes not charged right now.
    pub fn available(&self) -> usize {
        self.inner.capacity.saturating_sub(self.used())
    }

    /// Charges `bytes` if they fit, else `None`. A charge larger than the whole budget is
    /// clamped to it, so such a request runs alone rather than never.
    pub fn try_charge(&self, bytes: usize) -> Option<MemoryCharge> {
        let wanted = bytes.min(self.inner.capacity);
        self.inner
            .take(wanted, wanted)
            .then(|| self.charge_of(wanted))
    }

    /// Charges up to `wanted` bytes, as much as is free, if at least `floor` is; else `None`.
    pub fn try_charge_up_to(&self, wanted: usize, floor: usize) -> Option<MemoryCharge> {
        let floor = floor.min(wanted).min(self.inner.capacity);
        let mut used = self.inner.used.load(Ordering::Relaxed);
        loop {
            let free = self.inner.capacity.saturating_sub(used);
            if free < floor {
                return None;
            }
            let take = wanted.min(free);
            match self.inner.used.compare_exchange_weak(
                used,
                used + take,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(self.charge_of(take)),
                Err(now) => used = now,
            }
        }
    }

    /// Charges `bytes` whether or not they fit: for memory that is already held (a built
    /// answer), so that later requests see it.
    pub fn charge(&self, bytes: usize) -> MemoryCharge {
        self.inner.used.fetch_add(bytes, Ordering::AcqRel);
        self.charge_of(bytes)
    }

    fn charge_of(&self, bytes: usize) -> MemoryCharge {
        MemoryCharge {
            inner: Arc::clone(&self.inner),
            bytes,
        }
    }
}

impl Inner {
    /// Adds `bytes` to `used` if `needed` more fit.
    fn take(&self, bytes: usize, needed: usize) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            if used.saturating_add(needed) > self.capacity {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used + bytes,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }
}

impl MemoryCharge {
    /// Bytes this charge holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Charges `more` bytes on top if they fit; whether they did.
    pub fn try_grow(&mut self, more: usize) -> bool {
        if self.inner.take(more, more) {
            self.bytes += more;
            true
        } else {
            false
        }
    }

    /// Makes this charge exactly `bytes`: returns the excess, or takes the difference
    /// whether or not it fits (the memory is held already).
    pub fn set(&mut self, bytes: usize) {
        if bytes < self.bytes {
            self.inner
                .used
                .fetch_sub(self.bytes - bytes, Ordering::AcqRel);
        } else {
            self.inner
                .used
                .fetch_add(bytes - self.bytes, Ordering::AcqRel);
        }
        self.bytes = bytes;
    }
}

impl Drop for MemoryCharge {
    fn drop(&mut self) {
        self.inner.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// The most of the free budget one answer reserves: a quarter, so that answers built at the
/// same moment share it (the first takes 1/4, the next 1/4 of the rest, ...), each returning
/// its excess once built.
pub const ANSWER_SHARE_OF_FREE: usize = 4;

/// Where a receive or an offset read takes the memory for its answer: right before each read
/// it reserves up to `max_reserve` bytes (at least `min_reserve`, else the read is refused
/// as overloaded) and reads at most a `bytes_per_value_byte`-th of that in message values.
/// The reservation lasts until the next read, [`AnswerMemory::release`], or the last clone is
/// dropped: the caller keeps this value while it builds the answer.
#[derive(Debug, Clone)]
pub struct AnswerMemory {
    budget: MemoryBudget,
    max_reserve: usize,
    min_reserve: usize,
    bytes_per_value_byte: usize,
    /// This answer's reservation. Changed by single assignments, so a panicked holder
    /// leaves it whole ([`crate::sync`]).
    taken: Arc<Mutex<Option<MemoryCharge>>>,
}

impl AnswerMemory {
    /// Room from `budget`: `min_reserve..=max_reserve` bytes per answer, of which a
    /// `bytes_per_value_byte`-th may be message values (the rest is their encoding).
    pub fn new(
        budget: MemoryBudget,
        max_reserve: usize,
        min_reserve: usize,
        bytes_per_value_byte: usize,
    ) -> Self {
        AnswerMemory {
            budget,
            max_reserve,
            min_reserve,
            bytes_per_value_byte: bytes_per_value_byte.max(1),
            taken: Arc::new(Mutex::new(None)),
        }
    }

    /// Reserves room for one read and returns the value bytes it may take (at least 1: a
    /// read always returns its first record), or `None` when the budget is spent. One
    /// answer takes at most a [`ANSWER_SHARE_OF_FREE`]-th of what is free, so that many
    /// receives woken at once all get room (smaller and smaller) instead of the first few
    /// taking it all. Replaces an earlier reservation of this answer.
    pub fn reserve(&self) -> Option<usize> {
        let mut taken = lock(&self.taken);
        *taken = None;
        let share = (self.budget.available() / ANSWER_SHARE_OF_FREE).max(self.min_reserve);
        let charge = self
            .budget
            .try_charge_up_to(self.max_reserve.min(share), self.min_reserve)?;
        let values = (charge.bytes() / self.bytes_per_value_byte).max(1);
        *taken = Some(charge);
        Some(values)
    }

    /// Returns the reservation: the read found nothing.
    pub fn release(&self) {
        *lock(&self.taken) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_fits_up_to_the_capacity_and_returns_its_bytes_on_drop() {
        let budget = MemoryBudget::new(100);
        let first = budget.try_charge(99).expect("limit - 1 fits");
        assert!(budget.try_charge(2).is_none(), "limit + 1 refused");
        let last = budget.try_charge(1).expect("exactly the limit fits");
        assert_eq!(budget.used(), 100);
        drop((first, last));
        assert_eq!(budget.used(), 0);
        let whole = budget
            .try_charge(101)
            .expect("oversize is clamped and runs alone");
        assert_eq!(whole.bytes(), 100);
    }

    #[test]
    fn a_charge_grows_while_it_fits_and_set_returns_or_forces_the_difference() {
        let budget = MemoryBudget::new(100);
        let mut charge = budget.try_charge(10).expect("fits");
        assert!(charge.try_grow(90));
        assert!(!charge.try_grow(1), "one past the capacity");
        charge.set(30);
        assert_eq!(budget.used(), 30);
        charge.set(150);
        assert_eq!(budget.used(), 150, "memory already held is counted anyway");
        assert!(budget.try_charge(1).is_none());
        drop(charge);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn up_to_takes_what_is_free_above_the_floor() {
        let budget = MemoryBudget::new(100);
        let _held = budget.try_charge(70).expect("fits");
        let some = budget.try_charge_up_to(50, 20).expect("30 free, floor 20");
        assert_eq!(some.bytes(), 30);
        assert!(budget.try_charge_up_to(50, 1).is_none(), "nothing left");
        drop(some);
        assert!(
            budget.try_charge_up_to(50, 31).is_none(),
            "30 free, floor 31"
        );
    }

    #[test]
    fn an_answer_reserves_right_before_its_read_and_holds_it_until_dropped() {
        let budget = MemoryBudget::new(4000);
        let answer = AnswerMemory::new(budget.clone(), 800, 100, 4);
        assert_eq!(answer.reserve(), Some(200), "the cap: 800 of 4000");
        assert_eq!(budget.used(), 800);
        assert_eq!(
            answer.reserve(),
            Some(200),
            "a second read replaces the first"
        );
        assert_eq!(budget.used(), 800);
        let other = AnswerMemory::new(budget.clone(), 800, 100, 4);
        assert_eq!(
            other.reserve(),
            Some(200),
            "3200 free: a quarter is over the cap"
        );
        let third = AnswerMemory::new(budget.clone(), 4000, 100, 4);
        assert_eq!(third.reserve(), Some(150), "a quarter of the 2400 free");
        let _rest = budget.try_charge(1_700).expect("fits");
        let fourth = AnswerMemory::new(budget.clone(), 800, 200, 4);
        assert_eq!(fourth.reserve(), None, "100 free, floor 200");
        answer.release();
        assert_eq!(budget.used(), 3_100);
        assert_eq!(fourth.reserve(), Some(56), "a quarter of the 900 free");
        assert_eq!(budget.used(), 3_100 + 225, "the reservation");
        drop(fourth);
        assert_eq!(budget.used(), 3_100);
    }
}
