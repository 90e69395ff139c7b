//! Who may do what: tokens of every kind (good and bad), each route's grant, and the browser
//! guard (origins and hosts) that keeps web pages off an anonymous server.

#[path = "../support/mod.rs"]
pub mod support;

mod auth_routes;
mod auth_tokens;
mod browser_guard;
