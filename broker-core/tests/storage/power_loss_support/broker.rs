//! The broker's side of D4: what a produce reply said (`durability`, the `Wharf-Durability`
//! header) about each record a power loss took. A broker on a [`SimulatedDisk`] under an fsync
//! interval; producers send random batches until the power goes at a random write; the broker
//! reopens on the files as the loss left them (sled, whose flushes are not simulated, keeps
//! everything it wrote).

use std::sync::Arc;
use std::time::Instant;

use broker_core::Broker;
use broker_core::broker::{AckMode, Durability, NewMessage};
use broker_core::config::FsyncPolicy;
use broker_core::storage::crash_sim::{SimulatedDisk, Tearing};
use broker_core::topic::TopicSpec;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::support::{open, temp_root};

/// Producers at once.
const PRODUCERS: u64 = 2;
/// Produce requests each sends at most.
const MAX_PRODUCES: usize = 30;
/// Messages in a produce request at most.
const MAX_MESSAGES: usize = 4;
/// The power goes right after a random write among the first this many.
const MAX_CRASH_WRITE: u64 = 40;

/// What one broker run counted.
#[derive(Debug, Default, Clone)]
pub struct Replies {
    /// Messages whose produce was answered before the power went.
    pub acked: u64,
    /// Of those, messages lost.
    pub lost: u64,
    /// Lost messages whose reply said `leader-written` (the weaker durability).
    pub lost_leader_written: u64,
    /// Age at the power loss of each lost message's reply, in ms.
    pub lost_ages_ms: Vec<u64>,
    /// Messages served that are not at their acknowledged offset with their bytes.
    pub wrong: u64,
}

impl Replies {
    /// Adds another run's counts.
    pub fn add(&mut self, other: &Replies) {
        self.acked += other.acked;
        self.lost += other.lost;
        self.lost_leader_written += other.lost_leader_written;
        self.lost_ages_ms.extend(&other.lost_ages_ms);
        self.wrong += other.wrong;
    }
}

/// One acknowledged message: its offset, its value, what the reply said, and when.
type Acked = (u64, Bytes, Durability, Instant);

async fn produce(broker: Arc<Broker>, disk: Arc<SimulatedDisk>, seed: u64) -> Vec<Acked> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut acked = Vec::new();
    for _ in 0..MAX_PRODUCES {
        if disk.is_crashed() {
            break;
        }
        let values: Vec<Bytes> = (0..rng.gen_range(1..=MAX_MESSAGES))
            .map(|_| {
                let mut value = vec![0; rng.gen_range(1..=500)];
                rng.fill(&mut value[..]);
                Bytes::from(value)
            })
            .collect();
        let messages = values
            .iter()
            .map(|value| NewMessage {
                key: None,
                value: value.clone(),
                binary: true,
                headers: Vec::new(),
                tags: Vec::new(),
                id: None,
                delay: None,
                trace: None,
            })
            .collect();
        let reply = broker.produce("t", messages, AckMode::Leader).await;
        let before_loss = !disk.is_crashed();
        let Ok(outcome) = reply else { break };
        if !before_loss {
            break;
        }
        for (produced, value) in outcome.messages.iter().zip(values) {
            let offset = produced.offset.expect("an offset");
            acked.push((offset, value, outcome.durability, Instant::now()));
        }
    }
    acked
}

/// Runs `seed`: a power loss under an interval of `interval_ms`, then the check of every
/// acknowledged message against the reopened broker.
pub async fn run_seed(seed: u64, interval_ms: u64) -> Replies {
    let root = temp_root();
    let fsync = FsyncPolicy::IntervalMs(interval_ms);
    let broker = open(root.path(), fsync).await;
    let spec = TopicSpec {
        name: "t".into(),
        partitions: Some(1),
        ..TopicSpec::default()
    };
    broker.create_topic(spec).await.expect("topic");
    let disk = Arc::new(SimulatedDisk::watch(root.path()));
    let mut rng = StdRng::seed_from_u64(seed);
    disk.crash_after_write(
        rng.gen_range(1..=MAX_CRASH_WRITE),
        rng.r#gen(),
        Tearing::default(),
    );
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| tokio::spawn(produce(Arc::clone(&broker), Arc::clone(&disk), rng.r#gen())))
        .collect();
    let mut acked = Vec::new();
    for producer in producers {
        acked.extend(producer.await.expect("producer"));
    }
    disk.power_loss_now(rng.r#gen(), Tearing::default());
    let loss = disk.power_loss().expect("the power is cut");
    broker.shutdown().await;
    drop(broker);
    loss.apply()
        .expect("write the files as the power loss left them");
    disk.revive();
    let broker = open(root.path(), fsync).await;
    let served = read_all(&broker).await;
    let mut replies = Replies::default();
    for (offset, value, durability, at) in acked {
        replies.acked += 1;
        match served.get(offset as usize) {
            Some(stored) if stored.offset == offset && stored.record.value == value => {}
            Some(_) => replies.wrong += 1,
            None => {
                replies.lost += 1;
                let weaker = durability == Durability::LeaderWritten;
                replies.lost_leader_written += u64::from(weaker);
                let age = loss.at.saturating_duration_since(at).as_millis() as u64;
                replies.lost_ages_ms.push(age);
            }
        }
    }
    broker.shutdown().await;
    replies
}

async fn read_all(broker: &Broker) -> Vec<broker_core::message::StoredRecord> {
    let mut served = Vec::new();
    loop {
        let next = served.len() as u64;
        let read = broker
            .read_partition("t", 0, next, 100, 0, None)
            .await
            .expect("read");
        if read.messages.is_empty() {
            return served;
        }
        served.extend(read.messages);
    }
}
