//! [`History`]: the events of one run, sorted by kind, in the order they were written.

use thiserror::Error;

use crate::event::{Ack, Deliver, Drain, Drained, Event, Fault, Leader, Produce, Run, Unavailable};

/// The events of one run, sorted by kind; within a kind, in the order they were written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The run's header, once it has been read.
    pub run: Option<Run>,
    /// Producer operations.
    pub produces: Vec<Produce>,
    /// Deliveries to consumers.
    pub deliveries: Vec<Deliver>,
    /// Consumers' acks.
    pub acks: Vec<Ack>,
    /// Records read from the nodes' logs after healing.
    pub drains: Vec<Drain>,
    /// Which (node, partition) drains finished, and how many records each wrote.
    pub drained: Vec<Drained>,
    /// Fault starts and ends.
    pub faults: Vec<Fault>,
    /// Observed leaders.
    pub leaders: Vec<Leader>,
    /// Unavailability windows the harness measured.
    pub unavailable: Vec<Unavailable>,
}

/// An event that cannot join a history.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum HistoryError {
    /// A second `run` header: two runs were written into one file.
    #[error("a second run header (id {id}, seed {seed}); a history holds one run")]
    SecondRun {
        /// The second header's test ID.
        id: String,
        /// The second header's seed.
        seed: u64,
    },
}

impl History {
    /// Builds a history from events in the order they were written.
    pub fn from_events(events: impl IntoIterator<Item = Event>) -> Result<Self, HistoryError> {
        let mut history = Self::default();
        for event in events {
            history.push(event)?;
        }
        Ok(history)
    }

    /// Adds the next event.
    pub fn push(&mut self, event: Event) -> Result<(), HistoryError> {
        match event {
            Event::Run(run) => return self.set_run(run),
            Event::Produce(produce) => self.produces.push(produce),
            Event::Deliver(deliver) => self.deliveries.push(deliver),
            Event::Ack(ack) => self.acks.push(ack),
            Event::Drain(drain) => self.drains.push(drain),
            Event::Drained(drained) => self.drained.push(drained),
            Event::Fault(fault) => self.faults.push(fault),
            Event::Leader(leader) => self.leaders.push(leader),
            Event::Unavailable(window) => self.unavailable.push(window),
        }
        Ok(())
    }

    /// Whether the history holds no event besides, perhaps, its header.
    pub fn is_empty(&self) -> bool {
        self.produces.is_empty()
            && self.deliveries.is_empty()
            && self.acks.is_empty()
            && self.drains.is_empty()
            && self.drained.is_empty()
            && self.faults.is_empty()
            && self.leaders.is_empty()
            && self.unavailable.is_empty()
    }

    fn set_run(&mut self, run: Run) -> Result<(), HistoryError> {
        if self.run.is_some() {
            return Err(HistoryError::SecondRun {
                id: run.id,
                seed: run.seed,
            });
        }
        self.run = Some(run);
        Ok(())
    }
}
