//! A server process's CPU time (`utime + stime` from `/proc/<pid>/stat`) and memory
//! (`VmRSS`, `VmHWM` from `/proc/<pid>/status`), the reset of its `VmHWM`, and this process's
//! limit of open files. Linux only; elsewhere every reading is `None`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// Clock ticks per second of `/proc/<pid>/stat` times: `USER_HZ`, 100 on every Linux
/// architecture Wharf targets (`getconf CLK_TCK`).
pub const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds (user + system) the process has used, `pid` `None` meaning this process.
pub fn cpu_seconds(pid: Option<u32>) -> Option<f64> {
    let stat = std::fs::read_to_string(proc_path(pid, "stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name and state.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) as f64 / CLOCK_TICKS_PER_SECOND)
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`), in KiB.
pub fn status_kib(pid: Option<u32>, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(proc_path(pid, "status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Resets a process's `VmHWM` to its current `VmRSS` (writes `5` to `/proc/<pid>/clear_refs`,
/// Linux 4.0 and later), so that a later `VmHWM` is the peak of what came after.
pub fn reset_peak_rss(pid: u32) -> std::io::Result<()> {
    std::fs::write(proc_path(Some(pid), "clear_refs"), "5")
}

/// This process's soft limit of open files (`Max open files` in `/proc/self/limits`);
/// `None` if unreadable or unlimited.
pub fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string(proc_path(None, "limits")).ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.strip_prefix("Max open files")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn proc_path(pid: Option<u32>, file: &str) -> String {
    match pid {
        Some(pid) => format!("/proc/{pid}/{file}"),
        None => format!("/proc/self/{file}"),
    }
}

/// What a server used during one measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerUsage {
    /// CPU seconds (user + system) used during the measurement.
    pub cpu_s: f64,
    /// Largest `VmRSS` sampled during the measurement, KiB.
    pub rss_peak_kib: u64,
    /// `VmHWM` (peak resident set since the process started) at the end, KiB.
    pub hwm_kib: u64,
    /// CPU seconds every node of the server's cluster used during the measurement (itself
    /// included), when their processes were named (`--node-pid`): a replicated write costs
    /// work on every replica, not only on the node a client talks to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_cpu_s: Option<f64>,
}

impl ServerUsage {
    /// The usage of servers measured only as the CPU seconds their processes used together
    /// (NATS's servers; a cluster run given no server pid): `cpu_s` and `cluster_cpu_s` both
    /// hold it, no memory was sampled.
    pub fn of_nodes(cpu_s: f64) -> ServerUsage {
        ServerUsage {
            cpu_s,
            cluster_cpu_s: Some(cpu_s),
            ..ServerUsage::default()
        }
    }
}

/// CPU seconds a set of processes used between [`CpuMeter::start`] and
/// [`CpuMeter::finish`] (a process that is gone at the end counts as having used none
/// since the start).
#[derive(Debug, Clone)]
pub struct CpuMeter {
    at_start: Vec<(u32, f64)>,
}

impl CpuMeter {
    /// Reads every process of `pids` now; `None` when `pids` is empty.
    pub fn start(pids: &[u32]) -> Option<CpuMeter> {
        if pids.is_empty() {
            return None;
        }
        let at_start = pids
            .iter()
            .map(|&pid| (pid, cpu_seconds(Some(pid)).unwrap_or(0.0)))
            .collect();
        Some(CpuMeter { at_start })
    }

    /// Their CPU seconds since the start, summed.
    pub fn finish(&self) -> f64 {
        self.at_start
            .iter()
            .map(|&(pid, start)| (cpu_seconds(Some(pid)).unwrap_or(start) - start).max(0.0))
            .sum()
    }
}

/// Samples a process's resident memory every [`RSS_SAMPLE_INTERVAL`] until stopped, and
/// its CPU time at the start and end.
#[derive(Debug)]
pub struct UsageProbe {
    pid: u32,
    cpu_at_start: f64,
    stop: watch::Sender<bool>,
    sampler: tokio::task::JoinHandle<u64>,
}

/// How often [`UsageProbe`] reads `VmRSS`: often enough to catch a burst that lasts a few
/// hundred milliseconds, rare enough to cost nothing.
pub const RSS_SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

impl UsageProbe {
    /// Starts probing `pid`.
    pub fn start(pid: u32) -> UsageProbe {
        let (stop, mut stopped) = watch::channel(false);
        let sampler = tokio::spawn(async move {
            let mut peak = 0;
            loop {
                peak = peak.max(status_kib(Some(pid), "VmRSS").unwrap_or(0));
                tokio::select! {
                    _ = stopped.changed() => break,
                    () = tokio::time::sleep(RSS_SAMPLE_INTERVAL) => {}
                }
            }
            peak.max(status_kib(Some(pid), "VmRSS").unwrap_or(0))
        });
        UsageProbe {
            pid,
            cpu_at_start: cpu_seconds(Some(pid)).unwrap_or(0.0),
            stop,
            sampler,
        }
    }

    /// Stops probing and reports.
    pub async fn finish(self) -> ServerUsage {
        let cpu_at_end = cpu_seconds(Some(self.pid)).unwrap_or(self.cpu_at_start);
        let _ = self.stop.send(true);
        let rss_peak_kib = self.sampler.await.unwrap_or(0);
        ServerUsage {
            cpu_s: cpu_at_end - self.cpu_at_start,
            rss_peak_kib,
            hwm_kib: status_kib(Some(self.pid), "VmHWM").unwrap_or(0),
            cluster_cpu_s: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_cpu_time_and_memory() {
        if !cfg!(target_os = "linux") {
            return;
        }
        assert!(cpu_seconds(None).is_some());
        assert!(status_kib(None, "VmRSS").unwrap_or(0) > 0);
        assert!(status_kib(None, "VmHWM").unwrap_or(0) > 0);
        assert_eq!(status_kib(None, "NoSuchField"), None);
        assert!(open_files_limit().unwrap_or(u64::MAX) > 0);
    }

    #[test]
    fn a_cpu_meter_sums_what_its_processes_used() {
        if !cfg!(target_os = "linux") {
            return;
        }
        assert!(CpuMeter::start(&[]).is_none());
        let me = std::process::id();
        let Some(meter) = CpuMeter::start(&[me, me]) else {
            panic!("a meter of two processes");
        };
        // Spin until this process's own clock has moved two ticks, then the meter of the
        // same process twice reads twice its use.
        let Some(start) = cpu_seconds(None) else {
            panic!("this process's CPU time");
        };
        let mut spins = 0u64;
        while cpu_seconds(None).unwrap_or(f64::MAX) < start + 2.0 / CLOCK_TICKS_PER_SECOND {
            spins = std::hint::black_box(spins.wrapping_add(1));
        }
        let used = cpu_seconds(None).unwrap_or(start) - start;
        let metered = meter.finish();
        assert!(
            metered >= 2.0 * used,
            "metered {metered} s, used {used} s twice"
        );
    }
}
