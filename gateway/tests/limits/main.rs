//! Limits at the edge: memory budgets (requests, answers, long-poll slots, body sizes),
//! connection hygiene (slowloris, header limits, the connection cap, body timeouts), rate
//! limits per topic and per principal, the memory a real `wharf` holds under a thousand
//! producers or consumers that never read, and the overload benchmark (ignored: run by hand).

#[path = "../support/mod.rs"]
pub mod support;

mod limits_budgets;
mod limits_connections;
mod limits_overload;
mod limits_rate;
mod memory_bound;
