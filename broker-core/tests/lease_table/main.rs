//! The lease table of a subscription: its delivery rules, its bound on unacked messages,
//! replayed events and restores, and a model-based test.
//!
//! One test binary: each file below was a binary of its own.

mod delivery;
mod limits;
mod replay;
mod support;
// proptest keeps the cases that failed in `tests/proptest-regressions/table_model.txt`, named after
// this file: no two binaries' model tests may share a file name.
mod table_model;
