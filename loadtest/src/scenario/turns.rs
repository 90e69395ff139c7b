//! [`Turns`]: when one connection of a run sends: at once after its last reply (closed loop)
//! or at its intended times (open loop), until the measured window or the run's request
//! budget ends.

use tokio::time::Instant;

use super::{Budget, Window};
use crate::pacing::Schedule;

/// One connection's turns in a run.
#[derive(Debug)]
pub struct Turns {
    window: Window,
    budget: Budget,
    schedule: Option<Schedule>,
}

impl Turns {
    /// Turns within `window` and `budget`, at `schedule`'s times (`None`: closed loop).
    pub fn new(window: Window, budget: Budget, schedule: Option<Schedule>) -> Turns {
        Turns {
            window,
            budget,
            schedule,
        }
    }

    /// Waits for the next turn and gives its start (the intended time in an open loop, from
    /// which its latency counts); `None` once the window or the budget is over.
    pub async fn next(&mut self) -> Option<Instant> {
        let start = match &mut self.schedule {
            Some(schedule) => schedule.next_send(),
            None => Instant::now(),
        };
        if start >= self.window.deadline || !self.budget.take() {
            return None;
        }
        if self.schedule.is_some() {
            tokio::time::sleep_until(start).await;
        }
        Some(start)
    }

    /// Whether a turn that started at `start` is measured (past the warm-up).
    pub fn measures(&self, start: Instant) -> bool {
        self.window.measures(start)
    }
}
