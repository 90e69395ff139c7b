//! Open-loop pacing (as wrk2 does it): a fixed total arrival rate is split evenly over the
//! connections, each with its own schedule of intended send times, staggered so the requests
//! of all connections interleave. A worker sleeps until the next intended time (not at all if
//! it is late) and measures latency from the intended time, so a stall shows up in the
//! latency of every request it delayed instead of silently lowering the rate.

use std::time::Duration;

use tokio::time::Instant;

/// Intended send times of one connection.
#[derive(Debug, Clone)]
pub struct Schedule {
    first: Instant,
    interval: Duration,
    sent: u32,
}

impl Schedule {
    /// The schedule of connection `index` of `connections` sharing `rate_per_s` requests per
    /// second, starting at `start`.
    pub fn new(start: Instant, rate_per_s: f64, connections: usize, index: usize) -> Schedule {
        let connections = connections.max(1) as f64;
        let interval = Duration::from_secs_f64(connections / rate_per_s.max(1e-3));
        let stagger = interval.mul_f64(index as f64 / connections);
        Schedule {
            first: start + stagger,
            interval,
            sent: 0,
        }
    }

    /// The intended time of the next request.
    pub fn next_send(&mut self) -> Instant {
        let at = self.first + self.interval * self.sent;
        self.sent = self.sent.saturating_add(1);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_share_the_rate_and_interleave() {
        let start = Instant::now();
        let mut times: Vec<Instant> = (0..4)
            .flat_map(|index| {
                let mut schedule = Schedule::new(start, 1000.0, 4, index);
                (0..250).map(move |_| schedule.next_send())
            })
            .collect();
        times.sort();
        let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter()
                .all(|gap| gap.abs_diff(Duration::from_millis(1)) < Duration::from_micros(5))
        );
        assert!(times[999] - start < Duration::from_secs(1));
    }
}
