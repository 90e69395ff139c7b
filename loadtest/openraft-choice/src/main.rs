//! Side-by-side write benchmark of openraft 0.9.25 and 0.10.0-alpha.37.
//!
//! Every run builds a fresh in-process cluster (1 or 3 nodes), warms it up,
//! then issues bounded client writes of 1 KiB and measures writes/s, latency
//! percentiles and process CPU time (getrusage RUSAGE_SELF user+sys) per
//! write. Versions alternate round by round; the summary quotes medians over
//! rounds and the 0.10/0.9 ratio of those medians from this same run.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use hdrhistogram::Histogram;

mod v09;
mod v10;

/// Heartbeat interval for both versions (ms); the election timeout is
/// 10x..20x of it. 100 ms unless an idle measurement changes it.
static HEARTBEAT_MS: AtomicU64 = AtomicU64::new(100);

pub fn heartbeat_ms() -> u64 {
    HEARTBEAT_MS.load(Ordering::Relaxed)
}
const PAYLOAD_BYTES: usize = 1024;

/// Application data: an opaque 1 KiB payload.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Data(pub Vec<u8>);

impl fmt::Display for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Data({} bytes)", self.0.len())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Version {
    V09,
    V10,
    /// 0.10 with a network that overrides `stream_append` and forwards to the
    /// target's `Raft::stream_append` (pipelined replication).
    V10Pipe,
}

impl Version {
    fn name(self) -> &'static str {
        match self {
            Version::V09 => "0.9.25",
            Version::V10 => "0.10.0-alpha.37",
            Version::V10Pipe => "0.10.0-alpha.37+stream_append",
        }
    }
}

enum Cluster {
    V09(v09::Cluster),
    V10(v10::Cluster),
}

impl Cluster {
    async fn start(v: Version, nodes: u64) -> Cluster {
        match v {
            Version::V09 => Cluster::V09(v09::Cluster::start(nodes).await),
            Version::V10 => Cluster::V10(v10::Cluster::start(nodes, false).await),
            Version::V10Pipe => Cluster::V10(v10::Cluster::start(nodes, true).await),
        }
    }

    async fn write_batch(&self, batch: Vec<Data>) -> u64 {
        match self {
            Cluster::V09(c) => {
                assert_eq!(batch.len(), 1, "0.9 has no batch write API");
                let d = batch.into_iter().next().unwrap();
                c.write(d).await
            }
            Cluster::V10(c) => {
                if batch.len() == 1 {
                    c.write(batch.into_iter().next().unwrap()).await
                } else {
                    c.write_many(batch).await
                }
            }
        }
    }

    fn applied_on_leader(&self) -> u64 {
        match self {
            Cluster::V09(c) => c.applied_on_leader(),
            Cluster::V10(c) => c.applied_on_leader(),
        }
    }

    async fn shutdown(self) {
        match self {
            Cluster::V09(c) => c.shutdown().await,
            Cluster::V10(c) => c.shutdown().await,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Scenario {
    name: &'static str,
    nodes: u64,
    writers: u64,
    /// Entries per call (`client_write_many`, 0.10 only) when > 1.
    batch: u64,
    /// 1 KiB messages packed into one entry (application-level batching).
    pack: u64,
    /// Messages to write.
    total: u64,
}

#[derive(Clone, Debug)]
struct Sample {
    writes: u64,
    secs: f64,
    p50_us: u64,
    p99_us: u64,
    cpu_us_per_write: f64,
    ctx_switches_per_write: f64,
    truncated: bool,
}

impl Sample {
    fn wps(&self) -> f64 {
        self.writes as f64 / self.secs
    }
}

/// Process CPU time (user + sys, all threads) and context switches
/// (voluntary + involuntary) so far, from getrusage(RUSAGE_SELF).
fn cpu_time() -> (Duration, u64) {
    // getrusage writes into a zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0);
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (
        tv(ru.ru_utime) + tv(ru.ru_stime),
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
    )
}

fn payload(pack: u64) -> Data {
    Data(vec![0xAB; PAYLOAD_BYTES * pack as usize])
}

async fn drive(
    cluster: &Arc<Cluster>,
    sc: Scenario,
    total: u64,
    deadline: Duration,
) -> (u64, Histogram<u64>, bool) {
    let calls_total = total / (sc.batch * sc.pack);
    let per_writer = calls_total / sc.writers;
    let stop = Arc::new(AtomicBool::new(false));
    let end = Instant::now() + deadline;
    let mut handles = Vec::new();
    for _ in 0..sc.writers {
        let c = cluster.clone();
        let stop = stop.clone();
        let batch = sc.batch;
        let pack = sc.pack;
        handles.push(tokio::spawn(async move {
            let mut h = Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).unwrap();
            let mut done = 0u64;
            for _ in 0..per_writer {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let b: Vec<Data> = (0..batch).map(|_| payload(pack)).collect();
                let t = Instant::now();
                let idx = c.write_batch(b).await;
                std::hint::black_box(idx);
                h.record((t.elapsed().as_micros() as u64).max(1)).unwrap();
                done += batch * pack;
                if Instant::now() > end {
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
            (done, h)
        }));
    }
    let mut hist = Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).unwrap();
    let mut done = 0;
    for h in handles {
        let (d, hh) = h.await.expect("writer task");
        done += d;
        hist.add(hh).unwrap();
    }
    (done, hist, stop.load(Ordering::Relaxed))
}

async fn run_one(v: Version, sc: Scenario, deadline: Duration) -> Sample {
    let cluster = Arc::new(Cluster::start(v, sc.nodes).await);
    // Warm-up, not measured: 2% of the load, same shape.
    let warm = (sc.total / 50).max(sc.writers * sc.batch * sc.pack);
    let (warm_done, _, _) = drive(&cluster, sc, warm, deadline).await;

    let (cpu0, cs0) = cpu_time();
    let t0 = Instant::now();
    let (done, hist, truncated) = drive(&cluster, sc, sc.total, deadline).await;
    let secs = t0.elapsed().as_secs_f64();
    let (cpu1, cs1) = cpu_time();
    let cpu = cpu1 - cpu0;

    let applied = cluster.applied_on_leader();
    assert!(
        applied * sc.pack >= warm_done + done,
        "state machine applied {applied} < written {}",
        warm_done + done
    );
    let Ok(cluster) = Arc::try_unwrap(cluster) else {
        panic!("all writers finished")
    };
    cluster.shutdown().await;

    Sample {
        writes: done,
        secs,
        p50_us: hist.value_at_quantile(0.50),
        p99_us: hist.value_at_quantile(0.99),
        cpu_us_per_write: cpu.as_secs_f64() * 1e6 / done as f64,
        ctx_switches_per_write: (cs1 - cs0) as f64 / done as f64,
        truncated,
    }
}

/// Idle cost of many Raft groups in one process: start `groups` clusters of
/// 3 nodes, wait for leaders, then measure process CPU over `secs` of idling
/// (ticks, heartbeats, timers only). Returns CPU ms per second per group.
async fn run_idle(v: Version, groups: u64, secs: u64) -> f64 {
    let clusters = futures_util::future::join_all((0..groups).map(|_| Cluster::start(v, 3))).await;
    // Let start-up work (elections, blank entries) settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (cpu0, _) = cpu_time();
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (cpu1, _) = cpu_time();
    let wall = t0.elapsed().as_secs_f64();
    for c in clusters {
        c.shutdown().await;
    }
    (cpu1 - cpu0).as_secs_f64() * 1e3 / wall / groups as f64
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: u64 = arg(&args, "--rounds", 3);
    let seq_n: u64 = arg(&args, "--seq", 20_000);
    let conc_n: u64 = arg(&args, "--conc", 100_000);
    let writers: u64 = arg(&args, "--writers", 64);
    let batch: u64 = arg(&args, "--batch", 16);
    let deadline = Duration::from_secs(arg(&args, "--deadline-secs", 20));
    let pipe = args.iter().any(|a| a == "--with-pipelined");
    let filter: String = arg(&args, "--only", String::new());
    let out: String = arg(&args, "--out", String::from("results.tsv"));
    // Optional: run one version only (for profiling), "0.9" or "0.10".
    let only_version: String = arg(&args, "--only-version", String::new());

    let scenarios = [
        Scenario {
            name: "1. 3 nodes, 1 writer",
            nodes: 3,
            writers: 1,
            batch: 1,
            pack: 1,
            total: seq_n,
        },
        Scenario {
            name: "2. 3 nodes, 64 writers",
            nodes: 3,
            writers,
            batch: 1,
            pack: 1,
            total: conc_n,
        },
        Scenario {
            name: "3a. 1 node, 1 writer",
            nodes: 1,
            writers: 1,
            batch: 1,
            pack: 1,
            total: seq_n,
        },
        Scenario {
            name: "3b. 1 node, 64 writers",
            nodes: 1,
            writers,
            batch: 1,
            pack: 1,
            total: conc_n,
        },
        Scenario {
            name: "4a. 3 nodes, 64 writers x batch 16",
            nodes: 3,
            writers,
            batch,
            pack: 1,
            total: conc_n,
        },
        Scenario {
            name: "4b. 1 node, 64 writers x batch 16",
            nodes: 1,
            writers,
            batch,
            pack: 1,
            total: conc_n,
        },
        // Same number of entries in flight as scenario 4, without a batch API.
        Scenario {
            name: "5a. 3 nodes, 1024 writers",
            nodes: 3,
            writers: writers * batch,
            batch: 1,
            pack: 1,
            total: conc_n,
        },
        Scenario {
            name: "5b. 1 node, 1024 writers",
            nodes: 1,
            writers: writers * batch,
            batch: 1,
            pack: 1,
            total: conc_n,
        },
        // Application-level batching, possible on both versions: one entry carries 16 messages.
        Scenario {
            name: "6a. 3 nodes, 64 writers x 16 msgs/entry",
            nodes: 3,
            writers,
            batch: 1,
            pack: batch,
            total: conc_n,
        },
        Scenario {
            name: "6b. 1 node, 64 writers x 16 msgs/entry",
            nodes: 1,
            writers,
            batch: 1,
            pack: batch,
            total: conc_n,
        },
    ];

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let mut tsv = std::fs::File::create(&out).expect("create results file");
    writeln!(tsv, "round\tscenario\tversion\twrites\tsecs\twrites_per_s\tp50_us\tp99_us\tcpu_us_per_write\tctx_switches_per_write\ttruncated")
        .unwrap();

    let mut results: BTreeMap<(usize, Version), Vec<Sample>> = BTreeMap::new();
    let started = Instant::now();

    // Idle cost of many groups (0 disables), alternating versions per round.
    let idle_groups: u64 = arg(&args, "--idle-groups", 0);
    let idle_secs: u64 = arg(&args, "--idle-secs", 3);
    let idle_heartbeats: String = arg(&args, "--idle-heartbeats", String::from("100"));
    let mut idle: BTreeMap<(u64, Version), Vec<f64>> = BTreeMap::new();
    let hbs: Vec<u64> = idle_heartbeats
        .split(',')
        .filter_map(|x| x.parse().ok())
        .collect();
    for &hb in hbs.iter().filter(|_| idle_groups > 0) {
        HEARTBEAT_MS.store(hb, Ordering::Relaxed);
        for round in 0..3 {
            let mut vs = vec![Version::V09, Version::V10];
            if round % 2 == 1 {
                vs.reverse();
            }
            for v in vs {
                let ms = rt.block_on(run_idle(v, idle_groups, idle_secs));
                eprintln!(
                    "[{:>5.1}s] idle round {} | {} groups x 3 nodes | heartbeat {} ms | {:<30} | {:.3} CPU ms/s per group",
                    started.elapsed().as_secs_f64(),
                    round + 1,
                    idle_groups,
                    hb,
                    v.name(),
                    ms
                );
                idle.entry((hb, v)).or_default().push(ms);
            }
        }
    }
    HEARTBEAT_MS.store(100, Ordering::Relaxed);

    for round in 0..rounds {
        for (si, sc) in scenarios.iter().enumerate() {
            if !filter.is_empty() && !sc.name.starts_with(&filter) {
                continue;
            }
            let is_batch = sc.batch > 1;
            let mut versions: Vec<Version> = if is_batch { vec![] } else { vec![Version::V09] };
            versions.push(Version::V10);
            if pipe && sc.nodes > 1 {
                versions.push(Version::V10Pipe);
            }
            // A B A B: odd rounds start with the other version.
            if round % 2 == 1 {
                versions.reverse();
            }
            versions
                .retain(|v| only_version.is_empty() || v.name().starts_with(only_version.as_str()));
            for v in versions {
                let s = rt.block_on(run_one(v, *sc, deadline));
                eprintln!(
                    "[{:>5.1}s] round {} | {:<38} | {:<30} | {:>7} writes {:>6.2}s {:>9.0} w/s p50 {:>6} us p99 {:>7} us cpu {:>6.1} us/w cs {:>5.2}/w{}",
                    started.elapsed().as_secs_f64(),
                    round + 1,
                    sc.name,
                    v.name(),
                    s.writes,
                    s.secs,
                    s.wps(),
                    s.p50_us,
                    s.p99_us,
                    s.cpu_us_per_write,
                    s.ctx_switches_per_write,
                    if s.truncated { " (deadline hit)" } else { "" }
                );
                writeln!(
                    tsv,
                    "{}\t{}\t{}\t{}\t{:.3}\t{:.0}\t{}\t{}\t{:.2}\t{:.3}\t{}",
                    round + 1,
                    sc.name,
                    v.name(),
                    s.writes,
                    s.secs,
                    s.wps(),
                    s.p50_us,
                    s.p99_us,
                    s.cpu_us_per_write,
                    s.ctx_switches_per_write,
                    s.truncated
                )
                .unwrap();
                results.entry((si, v)).or_default().push(s);
            }
        }
    }
    rt.shutdown_timeout(Duration::from_secs(5));

    if !idle.is_empty() {
        println!(
            "\nIdle cost, {idle_groups} groups x 3 nodes in one process, {idle_secs} s window, median of 3 rounds\n"
        );
        println!(
            "| heartbeat ms | version | CPU ms per second per group (3 nodes) | % of one core for all groups | ratio vs 0.9 |"
        );
        println!("|---:|---|---:|---:|---:|");
        for ((hb, v), xs) in &idle {
            let base = median(idle[&(*hb, Version::V09)].clone());
            let m = median(xs.clone());
            println!(
                "| {} | {} | {:.3} | {:.1} | {:.2} |",
                hb,
                v.name(),
                m,
                m * idle_groups as f64 / 10.0,
                m / base
            );
        }
    }

    // Summary: medians over rounds, ratio against 0.9 medians from this run.
    println!(
        "\nMedians over {rounds} rounds (total wall time {:.0}s)\n",
        started.elapsed().as_secs_f64()
    );
    println!(
        "| scenario | version | writes/s | p50 µs | p99 µs | CPU µs/write | ctx switches/write | writes/s ratio vs 0.9 | p50 ratio | p99 ratio | CPU ratio |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (si, sc) in scenarios.iter().enumerate() {
        let med = |v: Version| {
            results.get(&(si, v)).map(|ss| {
                (
                    median(ss.iter().map(|s| s.wps()).collect()),
                    median(ss.iter().map(|s| s.p50_us as f64).collect()),
                    median(ss.iter().map(|s| s.p99_us as f64).collect()),
                    median(ss.iter().map(|s| s.cpu_us_per_write).collect()),
                    median(ss.iter().map(|s| s.ctx_switches_per_write).collect()),
                )
            })
        };
        let base = med(Version::V09);
        for v in [Version::V09, Version::V10, Version::V10Pipe] {
            let Some(m) = med(v) else { continue };
            let ratios = match (v, base) {
                (Version::V09, _) | (_, None) => "| | | |".to_string(),
                (_, Some(b)) => format!(
                    "{:.2} | {:.2} | {:.2} | {:.2} |",
                    m.0 / b.0,
                    m.1 / b.1,
                    m.2 / b.2,
                    m.3 / b.3
                ),
            };
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {:.2} | {}",
                sc.name,
                v.name(),
                m.0,
                m.1,
                m.2,
                m.3,
                m.4,
                ratios
            );
        }
    }
}
