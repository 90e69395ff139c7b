//! A temporary directory on tmpfs (`/dev/shm`) when there is one: for tests whose fsyncs need
//! not reach a disk (a simulated power loss needs no real fsync) or that reopen a log hundreds
//! of times. Shared by the `storage` and `cluster` binaries.

use std::path::Path;

/// A temporary directory on tmpfs when there is one, else in the default temporary folder.
pub fn temp_root() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm),
        false => tempfile::tempdir(),
    }
    .expect("temp dir")
}
