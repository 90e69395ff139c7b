//! [`DeliveryQueue`]: the bounded queue between the evaluator and the webhook sender. It never
//! blocks and never grows past its capacity: when full, the oldest waiting event is dropped
//! and counted, since a newer event about the same rule supersedes it.

use std::collections::VecDeque;
use std::num::NonZeroUsize;

/// Default capacity: events waiting for the sender. An event is under 1 KiB of JSON, so a
/// full queue holds under 1 MiB, and 1024 events cover every rule of a busy server firing and
/// resolving while a receiver is down for the whole retry schedule.
pub(crate) const DELIVERY_QUEUE_CAPACITY: NonZeroUsize = match NonZeroUsize::new(1024) {
    Some(capacity) => capacity,
    None => panic!("the capacity is not zero"),
};

/// A first-in, first-out queue of at most `capacity` items that drops its oldest item to
/// make room.
#[derive(Debug, Clone)]
pub struct DeliveryQueue<T> {
    items: VecDeque<T>,
    capacity: NonZeroUsize,
    dropped: u64,
}

impl<T> Default for DeliveryQueue<T> {
    /// An empty queue of [`DELIVERY_QUEUE_CAPACITY`].
    fn default() -> Self {
        DeliveryQueue::new(DELIVERY_QUEUE_CAPACITY)
    }
}

impl<T> DeliveryQueue<T> {
    /// An empty queue of `capacity` items. Memory is taken as items arrive, not up front.
    pub fn new(capacity: NonZeroUsize) -> Self {
        DeliveryQueue {
            items: VecDeque::new(),
            capacity,
            dropped: 0,
        }
    }

    /// Appends `item`; when the queue is full, first drops the oldest item, counts it and
    /// returns it (for the log).
    pub fn push(&mut self, item: T) -> Option<T> {
        let dropped = if self.items.len() == self.capacity.get() {
            self.dropped += 1;
            self.items.pop_front()
        } else {
            None
        };
        self.items.push_back(item);
        debug_assert!(self.items.len() <= self.capacity.get());
        dropped
    }

    /// Takes the oldest item.
    pub fn pop(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item waits.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The most items it holds.
    pub fn capacity(&self) -> NonZeroUsize {
        self.capacity
    }

    /// Items dropped to make room since the queue was made (for a metric).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;

    fn capacity(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).expect("not zero")
    }

    #[test]
    fn a_full_queue_drops_its_oldest_item_and_counts_it() {
        let mut queue = DeliveryQueue::new(capacity(3));
        for item in 1..=3 {
            assert_eq!(queue.push(item), None, "up to the capacity");
        }
        assert_eq!(queue.push(4), Some(1), "capacity + 1 drops the oldest");
        assert_eq!((queue.len(), queue.dropped()), (3, 1));
        let drained: Vec<i32> = std::iter::from_fn(|| queue.pop()).collect();
        assert_eq!(drained, [2, 3, 4]);
        assert!(queue.is_empty());
        assert_eq!(
            DeliveryQueue::<u8>::default().capacity(),
            DELIVERY_QUEUE_CAPACITY
        );
    }

    proptest! {
        #[test]
        fn the_queue_behaves_as_the_newest_items_of_everything_pushed(
            cap in 1_usize..6,
            ops in vec(any::<bool>(), 0..200),
        ) {
            // Model: every item pushed, in order; the queue is pushed[head..], never longer
            // than the capacity.
            let mut queue = DeliveryQueue::new(capacity(cap));
            let (mut pushed, mut head, mut dropped) = (Vec::new(), 0, 0_u64);
            for (n, push) in ops.into_iter().enumerate() {
                if push {
                    pushed.push(n);
                    let expected = (pushed.len() - head > cap).then(|| {
                        head += 1;
                        dropped += 1;
                        pushed[head - 1]
                    });
                    prop_assert_eq!(queue.push(n), expected);
                } else {
                    let expected = (head < pushed.len()).then(|| {
                        head += 1;
                        pushed[head - 1]
                    });
                    prop_assert_eq!(queue.pop(), expected);
                }
                prop_assert_eq!(queue.len(), pushed.len() - head);
                prop_assert_eq!(queue.dropped(), dropped);
                prop_assert!(queue.len() <= cap);
            }
        }
    }
}
