//! Every case of `RELIABILITY.md`, with what must hold and the test that exercises it, so that
//! the report lists a case nobody ran as such instead of leaving it out.

/// One case of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The plan's id (`D1`), the first word of the case's report lines.
    pub id: &'static str,
    /// Short name.
    pub name: &'static str,
    /// What must hold, in a few words.
    pub holds: &'static str,
    /// The test(s) that exercise it, `path::function`; empty while none does.
    pub tests: &'static str,
}

const fn case(
    id: &'static str,
    name: &'static str,
    holds: &'static str,
    tests: &'static str,
) -> Case {
    Case {
        id,
        name,
        holds,
        tests,
    }
}

/// The cases, in the plan's order: durability, replication, delivery semantics, edge.
pub const CASES: &[Case] = &[
    case(
        "D1",
        "kill -9 under load, fsync always",
        "every acknowledged produce readable after restart at its offset, byte for byte",
        "gateway/tests/crash/crash_recovery.rs",
    ),
    case(
        "D2",
        "kill -9, fsync interval",
        "no acknowledged loss: the page cache survives a process kill",
        "gateway/tests/crash/crash_recovery.rs",
    ),
    case(
        "D3",
        "simulated power loss, fsync always",
        "torn tails truncated, nothing past them served, no acknowledged loss",
        "broker-core/tests/storage/power_loss.rs",
    ),
    case(
        "D4",
        "simulated power loss, fsync interval",
        "losses only among acks within the interval",
        "broker-core/tests/storage/power_loss.rs",
    ),
    case(
        "D5",
        "corruption on disk",
        "detected by CRC, never served",
        "broker-core/tests/storage/corruption.rs",
    ),
    case(
        "D6",
        "disk full",
        "507 storage_full, no partial ack, writes resume after space returns",
        "gateway/tests/crash/disk_full.rs",
    ),
    case(
        "D7",
        "failing disk (EIO)",
        "no ack after a failed fsync, process stays up",
        "broker-core/tests/failpoints/storage.rs",
    ),
    case(
        "D8",
        "slow disk",
        "group commit shares the slow fsync; bounded queues answer 503 instead of growing",
        "broker-core/tests/failpoints/slow_disk.rs",
    ),
    case(
        "R1",
        "leader kill -9, five times",
        "acknowledged lost 0 on every replica; old leader rejoins",
        "reliability/tests/faults/process_faults.rs",
    ),
    case(
        "R2",
        "follower kill and catch-up",
        "acknowledged lost 0; the follower catches up",
        "reliability/tests/faults/process_faults.rs",
    ),
    case(
        "R3",
        "leader isolated on the minority side",
        "no ack from the minority side; nothing acknowledged lost; divergent records never served",
        "reliability/tests/faults/partitions.rs",
    ),
    case(
        "R4",
        "partition shapes",
        "no two leaders ack for one partition; nothing acknowledged lost",
        "reliability/tests/faults/partitions.rs",
    ),
    case(
        "R5",
        "paused (zombie) leader",
        "a deposed leader completes no ack",
        "reliability/tests/faults/process_faults.rs",
    ),
    case(
        "R6",
        "no unclean election",
        "an out-of-sync replica never leads",
        "reliability/tests/faults/elections.rs",
    ),
    case(
        "R7",
        "whole cluster kill -9",
        "fsync always: acknowledged lost 0",
        "reliability/tests/faults/process_faults.rs",
    ),
    case(
        "R8",
        "power loss of one node while another is paused",
        "per-node logs agree on every committed offset; acknowledged lost 0 on every node",
        "broker-core/tests/cluster/power_loss_pause.rs",
    ),
    case(
        "R9",
        "minority corruption",
        "a corrupted node never leads with a truncated log",
        "reliability/tests/faults/elections.rs",
    ),
    case(
        "R10",
        "clock skew",
        "no early delayed delivery, no spurious lease expiry",
        "reliability/tests/faults/clock_skew.rs",
    ),
    case(
        "R11",
        "flapping soak",
        "converges after healing; acknowledged lost 0",
        "reliability/tests/faults/soak.rs",
    ),
    case(
        "R12",
        "forwarding under churn",
        "no forward loops, nothing hangs past its timeout",
        "reliability/tests/faults/forwarding.rs",
    ),
    case(
        "R13",
        "idempotent retries across cuts",
        "a retried batch's ids stored once; nothing acknowledged lost; every acknowledged \
         message delivered, none after a confirmed ack",
        "reliability/tests/faults/idempotent_retries.rs",
    ),
    case(
        "S1",
        "lease expiry",
        "redelivered after the lease; a stale receipt acks nothing",
        "gateway/tests/delivery/delivery.rs",
    ),
    case(
        "S2",
        "poison message to the dead-letter topic",
        "dead-lettered after exactly max_deliveries, across restarts; redrive once",
        "gateway/tests/delivery/delivery_semantics_dead_letters.rs",
    ),
    case(
        "S3",
        "delayed messages across kill -9",
        "none early, none lost, none twice",
        "gateway/tests/crash/delay_crash.rs",
    ),
    case(
        "S4",
        "dedup across restart and failover",
        "a repeated id is stored once",
        "gateway/tests/delivery/delivery_semantics.rs",
    ),
    case(
        "S5",
        "key ordering",
        "per key, deliveries in publish order, one at a time",
        "gateway/tests/delivery/delivery_semantics_dead_letters.rs",
    ),
    case(
        "S6",
        "consumer crash mid-batch",
        "every message acknowledged at least once",
        "gateway/tests/crash/consumer_crash.rs",
    ),
    case(
        "S7",
        "offset reads and seek",
        "one value per offset; seek replays exactly the range",
        "gateway/tests/delivery/delivery_semantics.rs",
    ),
    case(
        "S8",
        "late ack after redelivery",
        "a late ack, nack or extend does not touch the newer lease",
        "reliability/tests/faults/late_acks.rs",
    ),
    case(
        "G1",
        "JWT matrix",
        "every bad token gets 401 and changes nothing",
        "gateway/tests/auth/auth_tokens.rs",
    ),
    case(
        "G2",
        "authorization matrix",
        "403 wherever the grant is missing, 401 without a token",
        "gateway/tests/auth/auth_routes.rs",
    ),
    case(
        "G3",
        "size limits and malformed bodies",
        "4xx problem+json, nothing stored",
        "gateway/tests/api/bad_input.rs",
    ),
    case(
        "G4",
        "header limits",
        "431 on both sides of each bound",
        "gateway/tests/limits/limits_connections.rs",
    ),
    case(
        "G5",
        "slow clients",
        "stalled connections cut at their timeouts, others served",
        "gateway/tests/limits/limits_connections.rs",
    ),
    case(
        "G6",
        "schemathesis",
        "no failures over the generated requests",
        "reliability/schemathesis",
    ),
    case(
        "G7",
        "rate-limit bypass",
        "admitted within the limit over every path spelling",
        "gateway/tests/limits/limits_rate.rs",
    ),
    case(
        "G8",
        "overload",
        "503 with Retry-After, memory bounded, nothing acknowledged lost",
        "gateway/tests/limits/memory_bound.rs",
    ),
    case(
        "G9",
        "error hygiene and route inventory",
        "every error problem+json with a known code; no undocumented route",
        "gateway/tests/api/bad_input.rs (and every expect_problem)",
    ),
    case(
        "G10",
        "forwarding SSRF",
        "forwarding targets only cluster members",
        "reliability/tests/faults/forwarding.rs",
    ),
];

/// The case with this id.
pub fn find(id: &str) -> Option<&'static Case> {
    CASES.iter().find(|case| case.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_of_the_plan_is_listed_once() {
        let mut expected: Vec<String> = Vec::new();
        for (prefix, count) in [("D", 8), ("R", 13), ("S", 8), ("G", 10)] {
            expected.extend((1..=count).map(|n| format!("{prefix}{n}")));
        }
        let listed: Vec<&str> = CASES.iter().map(|case| case.id).collect();
        assert_eq!(listed, expected);
        assert_eq!(
            find("R12").map(|case| case.name),
            Some("forwarding under churn")
        );
    }
}
