//! Poison-tolerant locking: [`lock`], [`read`] and [`write()`] take a `std::sync` lock even
//! when a thread panicked while holding it.
//!
//! A poisoned lock only says that some holder panicked. Refusing it would turn one panicked
//! request into a broker (or gateway) that fails every later request touching the same map.
//! Taking it anyway is sound only when the guarded state is still whole, so a lock may be
//! taken through this module only if every writer changes the state in single steps (one
//! insert, one remove, one assignment, a counter moved with its entry) and computes anything
//! that can fail before its first change. Each lock that does so says it in its field's docs
//! or at its one helper.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, poisoned or not.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes a read guard of `lock`, poisoned or not.
pub fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the write guard of `lock`, poisoned or not.
pub fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// Runs `hold`, which panics while it holds a guard.
    fn panic_while_holding(hold: impl FnOnce()) {
        assert!(catch_unwind(AssertUnwindSafe(hold)).is_err());
    }

    #[test]
    fn a_poisoned_mutex_is_still_locked_and_keeps_its_value() {
        let mutex = Mutex::new(vec![1]);
        panic_while_holding(|| {
            lock(&mutex).push(2);
            let _guard = lock(&mutex);
            panic!("a holder panics");
        });
        assert!(mutex.is_poisoned());
        assert_eq!(*lock(&mutex), vec![1, 2]);
    }

    #[test]
    fn a_poisoned_rwlock_is_still_read_and_written() {
        let rwlock = RwLock::new(1);
        panic_while_holding(|| {
            let _guard = write(&rwlock);
            panic!("a holder panics");
        });
        assert!(rwlock.is_poisoned());
        *write(&rwlock) += 1;
        assert_eq!(*read(&rwlock), 2);
    }
}
