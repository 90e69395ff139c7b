//! The HTTP API's cross-cutting behaviour: request ids, unknown routes and methods, probes,
//! shutdown; bad input of every kind answered with problem+json and changing nothing (with the
//! cases schemathesis found); and the web console's files and policy.

#[path = "../support/mod.rs"]
pub mod support;

mod bad_input;
mod http_basics;
mod schemathesis_findings;
mod ui;
