//! The fault cases of RELIABILITY.md against real `wharf` processes, each recording its report
//! line: process faults on three nodes (`process_faults`: R1, R2, R5, R7), elections that must
//! not happen (`elections`: R6, R9), a leader restored after a whole-cluster kill
//! (`restored_leader`), forwarding under churn and SSRF (`forwarding`: R12, G10), network
//! partitions (`partitions`: R3, R4), idempotent retries across cuts (`idempotent_retries`:
//! R13), the flapping soak (`soak`: R11), clock skew (`clock_skew`: R10), and late control
//! messages against one node (`late_acks`: S8). `partitions`, `idempotent_retries` and `soak`
//! run the nodes in network namespaces (root). Every test runs alone (`serial::CLUSTERS`):
//! each starts and breaks nodes on shared cores, with bounds timed for a machine to itself.

#[path = "../support/cluster.rs"]
mod cluster;
#[path = "../support/holding_proxy.rs"]
mod holding_proxy;
#[path = "../support/serial.rs"]
mod serial;

mod clock_skew;
mod elections;
mod forwarding;
mod idempotent_retries;
mod late_acks;
mod partitions;
mod process_faults;
mod restored_leader;
mod soak;
