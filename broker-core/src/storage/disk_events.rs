//! Where the segment code reports each change it makes to a file or a directory, so that the
//! crash simulator (`crash_sim`, feature `crash-sim`) knows what an fsync made durable. Without
//! the feature every function here is an empty inline function: release builds pay nothing.

#[cfg(feature = "crash-sim")]
pub(crate) use super::crash_sim::hooks::{
    before, created, dir_synced, removed, set_len, synced, wrote,
};

#[cfg(not(feature = "crash-sim"))]
mod off {
    use std::io;
    use std::path::Path;

    /// Before a change to `path`: the simulator fails it once the power is cut.
    #[inline(always)]
    pub(crate) fn before(_path: &Path) -> io::Result<()> {
        Ok(())
    }

    /// `bytes` were written at `at` in `path`.
    #[inline(always)]
    pub(crate) fn wrote(_path: &Path, _at: u64, _bytes: &[u8]) {}

    /// `path` was cut (or extended) to `len` bytes.
    #[inline(always)]
    pub(crate) fn set_len(_path: &Path, _len: u64) {}

    /// An fsync of `path` returned.
    #[inline(always)]
    pub(crate) fn synced(_path: &Path) {}

    /// `path` was created.
    #[inline(always)]
    pub(crate) fn created(_path: &Path) {}

    /// `path` was removed.
    #[inline(always)]
    pub(crate) fn removed(_path: &Path) {}

    /// An fsync of directory `dir` returned.
    #[inline(always)]
    pub(crate) fn dir_synced(_dir: &Path) {}
}

#[cfg(not(feature = "crash-sim"))]
pub(crate) use off::{before, created, dir_synced, removed, set_len, synced, wrote};
