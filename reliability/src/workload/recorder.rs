//! [`Recorder`]: the run's history file and its clock, shared by every task of a run.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::event::{Event, Fault, Leader, NodeId, Partition, Phase, Run};
use crate::writer::HistoryWriter;

/// The history of one run: its file, the monotonic clock every `*_ms` is read from, and the
/// first write error, kept until [`Recorder::finish`] reports it. Cloning shares the same file.
///
/// Events are appended under a mutex, one whole line at a time, and never while awaiting.
#[derive(Debug, Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    start: Instant,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    writer: HistoryWriter<BufWriter<File>>,
    error: Option<io::Error>,
}

impl Recorder {
    /// Creates the history at `path` (which must not exist: one file holds one run) and writes
    /// `run` as its header. The clock starts now.
    pub fn create(path: &Path, run: Run) -> io::Result<Recorder> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        let mut writer = HistoryWriter::new(BufWriter::new(file));
        writer.append(&Event::Run(run))?;
        Ok(Recorder {
            shared: Arc::new(Shared {
                path: path.to_path_buf(),
                start: Instant::now(),
                state: Mutex::new(State {
                    writer,
                    error: None,
                }),
            }),
        })
    }

    /// Milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        u64::try_from(self.shared.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The history file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// Appends `event`. A write error is kept (the first one) and returned by
    /// [`Recorder::finish`], so a task never has to stop for it.
    pub fn record(&self, event: &Event) {
        let mut state = self
            .shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if state.error.is_none()
            && let Err(error) = state.writer.append(event)
        {
            state.error = Some(error);
        }
    }

    /// Records a fault's start or end, now. `installed`: whether it really took effect.
    pub fn record_fault(&self, name: &str, node: Option<NodeId>, phase: Phase, installed: bool) {
        self.record(&Event::Fault(Fault {
            name: name.to_owned(),
            node,
            at_ms: self.now_ms(),
            phase,
            installed,
        }));
    }

    /// Records that `node` was seen leading `partition` in `term`, now.
    pub fn record_leader(&self, partition: Partition, node: NodeId, term: u64) {
        self.record(&Event::Leader(Leader {
            partition,
            node,
            term,
            at_ms: self.now_ms(),
        }));
    }

    /// Flushes the history and returns its path, or the first error any write met.
    pub fn finish(&self) -> io::Result<PathBuf> {
        let mut state = self
            .shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(error) = state.error.take() {
            return Err(error);
        }
        state.writer.flush()?;
        Ok(self.shared.path.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_file;

    fn run() -> Run {
        Run {
            id: "T1".into(),
            name: "recorder".into(),
            seed: 1,
            faults: vec![],
            require_leader_change: false,
            partitions: 1,
            nodes: vec![1],
            consumed_through: vec![],
            replicas: Default::default(),
            exactly_once_ids: false,
            idle_delivery_bound_ms: None,
        }
    }

    #[test]
    fn the_header_comes_first_and_events_follow() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("history.jsonl");
        let recorder = Recorder::create(&path, run()).expect("create");
        recorder.record_fault("kill", Some(1), Phase::Start, true);
        recorder.record_leader(0, 1, 3);
        let history = read_file(&recorder.finish().expect("finish")).expect("read");
        assert_eq!(history.run, Some(run()));
        assert_eq!(history.faults.len(), 1);
        assert_eq!(history.leaders[0].term, 3);
    }

    #[test]
    fn a_second_run_cannot_reuse_a_history_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("history.jsonl");
        Recorder::create(&path, run()).expect("create");
        assert!(Recorder::create(&path, run()).is_err());
    }
}
