//! JSON on the wire, written by hand where it is hot: the receive reply, SSE message and
//! offset-read page straight from the broker's records, byte for byte as `serde_json` writes
//! the derived DTOs.
//!
//! # Layout
//! - [`message`]: those three answers from the broker's records.
//! - [`text`]: JSON strings, numbers and `null` written as `serde_json` writes them, with a
//!   word-at-a-time escape scan; [`object`]: an object's members in order;
//!   [`integral_floats`]: whole floats written as integers; [`hex`]: [`hex::lower_hex`], the
//!   spelling of every MAC Wharf sends.
//! - [`payload`]: text `value` vs binary `value_base64` on the wire.

pub(crate) mod hex;
pub(crate) mod integral_floats;
pub(crate) mod message;
pub(crate) mod object;
pub(crate) mod payload;
pub(crate) mod text;
