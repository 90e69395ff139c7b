//! Crashes and restarts on a single node: a real `wharf` killed with SIGKILL mid-produce,
//! mid-ack and with delayed messages pending, a full disk, and consumers that die holding
//! their leases.

#[path = "../support/mod.rs"]
pub mod support;

mod ack_crash;
mod consumer_crash;
mod crash_recovery;
mod delay_crash;
mod disk_full;
