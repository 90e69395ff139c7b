//! The load generator against servers in this process on 127.0.0.1:0: its HTTP/1.1 client
//! against scripted servers (`client`), and every scenario end to end against the ceiling app
//! (`against_ceiling`).

mod against_ceiling;
mod client;
