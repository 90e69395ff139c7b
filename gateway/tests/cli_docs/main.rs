//! The `wharf` binary and what documents it: its `serve` start and stop, the client commands
//! run as a user would, and the OpenAPI document (checked in, current, routed, and stating the
//! ranges the server enforces).

#[path = "../support/mod.rs"]
pub mod support;

mod binary;
mod cli;
mod openapi;
mod openapi_ranges;

use std::process::Command;

use serde_json::Value;

/// The OpenAPI document the server serves, as JSON.
fn document() -> Value {
    serde_json::from_str(gateway::openapi::pretty_json()).expect("the document is JSON")
}

/// A `wharf` command without the `WHARF_*` variables of the test's environment.
fn wharf_without_env() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wharf"));
    for (name, _) in std::env::vars() {
        if name.starts_with("WHARF_") {
            command.env_remove(name);
        }
    }
    command
}
