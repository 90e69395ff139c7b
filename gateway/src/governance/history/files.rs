//! [`HistoryFiles`]: the per-minute history on disk, one ring file per series under
//! `<data>/history/`:
//!
//! ```text
//! <data>/history/<topic>/topic.hist      the topic's records
//! <data>/history/<topic>/s.<sub>.hist    each subscription's records
//! ```
//!
//! A file holds at most `retention` fixed-size records (see
//! [`broker_core::history::encoding`]): the record of minute `m` sits in slot
//! `m % retention`, written in place, so a file never grows past `retention × record` bytes
//! and needs no compaction. A slot never written reads as version 0 and is skipped, as is a
//! torn or corrupt record (checksum) and a record whose minute does not map to its slot (the
//! retention was changed: the file is cut to the new size and those records are dropped).
//!
//! Space per series (69 B a topic minute, 77 B a subscription minute):
//!
//! | series | per day (1,440 minutes) | default 7 days (10,080 minutes) |
//! |---|---|---|
//! | topic | 99,360 B | 695,520 B |
//! | subscription | 110,880 B | 776,160 B |
//!
//! Writes are not fsynced: a crash can lose the minutes the OS had not written back (the
//! history is a view of the figures, not data), and a torn record is skipped on load.
//! Every call here is blocking: the sampler runs them on the blocking pool.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use broker_core::history::{MinuteRecord, RetentionMinutes, SubscriptionMinute, TopicMinute};

/// The folder under the data folder.
pub const HISTORY_DIR: &str = "history";
/// A topic's file in its folder.
const TOPIC_FILE: &str = "topic.hist";
/// Before a subscription's name in its file name.
const SUBSCRIPTION_PREFIX: &str = "s.";
/// After a series' name in its file name.
const SUFFIX: &str = ".hist";

/// Which series a file holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SeriesKey {
    /// A topic's.
    Topic(String),
    /// A subscription's: its topic and name.
    Subscription(String, String),
}

/// What [`HistoryFiles::load`] found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Each topic's records, in no order.
    pub topics: Vec<(String, Vec<TopicMinute>)>,
    /// Each subscription's records, in no order.
    pub subscriptions: Vec<((String, String), Vec<SubscriptionMinute>)>,
}

/// The history folder of one node.
#[derive(Debug, Clone)]
pub struct HistoryFiles {
    dir: PathBuf,
    retention: RetentionMinutes,
}

impl HistoryFiles {
    /// The files under `<data_dir>/history`, keeping `retention` minutes per series.
    pub fn new(data_dir: &Path, retention: RetentionMinutes) -> Self {
        HistoryFiles {
            dir: data_dir.join(HISTORY_DIR),
            retention,
        }
    }

    /// The largest a series' file gets, bytes: `retention × record`.
    pub fn max_file_bytes<const C: usize, const G: usize>(retention: RetentionMinutes) -> u64 {
        retention.get() * MinuteRecord::<C, G>::ENCODED_LEN as u64
    }

    fn path(&self, key: &SeriesKey) -> PathBuf {
        match key {
            SeriesKey::Topic(topic) => self.dir.join(topic).join(TOPIC_FILE),
            SeriesKey::Subscription(topic, sub) => self
                .dir
                .join(topic)
                .join(format!("{SUBSCRIPTION_PREFIX}{sub}{SUFFIX}")),
        }
    }

    /// Writes `record` in its slot of `key`'s file.
    pub fn write<const C: usize, const G: usize>(
        &self,
        key: &SeriesKey,
        record: &MinuteRecord<C, G>,
    ) -> io::Result<()> {
        let path = self.path(key);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        let slot = record.minute % self.retention.get();
        let offset = slot * MinuteRecord::<C, G>::ENCODED_LEN as u64;
        file.write_all_at(&record.encode(), offset)
    }

    /// Removes `key`'s file (a topic's removes its whole folder); a missing one is fine.
    pub fn remove(&self, key: &SeriesKey) -> io::Result<()> {
        let removed = match key {
            SeriesKey::Topic(topic) => fs::remove_dir_all(self.dir.join(topic)),
            SeriesKey::Subscription(..) => fs::remove_file(self.path(key)),
        };
        match removed {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        }
    }

    /// Every series' valid records (see the module docs); files of a larger retention are cut
    /// to this one's size. A folder that does not exist yet holds nothing.
    pub fn load(&self) -> io::Result<Loaded> {
        let mut loaded = Loaded::default();
        let topics = match fs::read_dir(&self.dir) {
            Ok(topics) => topics,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(loaded),
            Err(error) => return Err(error),
        };
        for topic in topics {
            let topic = topic?;
            let Some(topic_name) = topic.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !topic.file_type()?.is_dir() {
                continue;
            }
            for file in fs::read_dir(topic.path())? {
                let file = file?;
                let Some(name) = file.file_name().to_str().map(str::to_owned) else {
                    continue;
                };
                if name == TOPIC_FILE {
                    let records = self.read_records(&file.path())?;
                    loaded.topics.push((topic_name.clone(), records));
                } else if let Some(sub) = name
                    .strip_prefix(SUBSCRIPTION_PREFIX)
                    .and_then(|rest| rest.strip_suffix(SUFFIX))
                {
                    let records = self.read_records(&file.path())?;
                    let key = (topic_name.clone(), sub.to_owned());
                    loaded.subscriptions.push((key, records));
                }
            }
        }
        Ok(loaded)
    }

    fn read_records<const C: usize, const G: usize>(
        &self,
        path: &Path,
    ) -> io::Result<Vec<MinuteRecord<C, G>>> {
        let len = MinuteRecord::<C, G>::ENCODED_LEN;
        let max = Self::max_file_bytes::<C, G>(self.retention);
        let mut file = OpenOptions::new().read(true).write(true).open(path)?;
        if file.metadata()?.len() > max {
            file.set_len(max)?;
        }
        let mut bytes = Vec::new();
        Read::by_ref(&mut file).take(max).read_to_end(&mut bytes)?;
        drop::<File>(file);
        let retention = self.retention.get();
        Ok((0_u64..)
            .zip(bytes.chunks_exact(len))
            .filter_map(|(slot, chunk)| {
                let record = MinuteRecord::<C, G>::decode(chunk).ok()?;
                (record.minute % retention == slot).then_some(record)
            })
            .collect())
    }

    /// Bytes of every file under the folder (for the bound test and the README's figure).
    pub fn disk_bytes(&self) -> io::Result<u64> {
        let mut total = 0;
        let Ok(topics) = fs::read_dir(&self.dir) else {
            return Ok(0);
        };
        for topic in topics {
            let topic = topic?;
            if topic.file_type()?.is_dir() {
                for file in fs::read_dir(topic.path())? {
                    total += file?.metadata()?.len();
                }
            }
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::history::GaugeMinute;
    use broker_core::history::retention::MIN_RETENTION_MINUTES;

    fn topic_record(minute: u64) -> TopicMinute {
        TopicMinute {
            minute,
            counters: [minute, 2, 3, 4, 5],
            gauges: [GaugeMinute::of(7)],
        }
    }

    fn sub_record(minute: u64) -> SubscriptionMinute {
        SubscriptionMinute {
            minute,
            counters: [minute, 1, 1, 1],
            gauges: [GaugeMinute::of(3), GaugeMinute::of(9)],
        }
    }

    #[test]
    fn files_stay_within_retention_times_record_after_more_minutes_than_the_retention() {
        let dir = tempfile::tempdir().expect("temp dir");
        let retention = RetentionMinutes::new(MIN_RETENTION_MINUTES).expect("valid");
        let files = HistoryFiles::new(dir.path(), retention);
        let (topics, subs_per_topic) = (3, 4);
        let minutes = 3 * MIN_RETENTION_MINUTES + 17;
        for minute in 0..minutes {
            for t in 0..topics {
                let topic = format!("topic-{t}");
                files
                    .write(&SeriesKey::Topic(topic.clone()), &topic_record(minute))
                    .expect("write");
                for s in 0..subs_per_topic {
                    let key = SeriesKey::Subscription(topic.clone(), format!("sub-{s}"));
                    files.write(&key, &sub_record(minute)).expect("write");
                }
            }
        }
        let bound = topics * HistoryFiles::max_file_bytes::<5, 1>(retention)
            + topics * subs_per_topic * HistoryFiles::max_file_bytes::<4, 2>(retention);
        assert_eq!(bound, 3 * 60 * 69 + 12 * 60 * 77);
        assert_eq!(files.disk_bytes().expect("size"), bound);
        let loaded = files.load().expect("load");
        assert_eq!(loaded.topics.len(), 3);
        assert_eq!(loaded.subscriptions.len(), 12);
        for (_, records) in &loaded.topics {
            let mut kept: Vec<u64> = records.iter().map(|r| r.minute).collect();
            kept.sort_unstable();
            assert_eq!(kept, (minutes - 60..minutes).collect::<Vec<_>>());
            assert!(records.iter().all(|r| r.counters[0] == r.minute));
        }
    }

    #[test]
    fn a_torn_record_and_a_smaller_retention_drop_only_what_they_spoil() {
        let dir = tempfile::tempdir().expect("temp dir");
        let wide = RetentionMinutes::new(120).expect("valid");
        let files = HistoryFiles::new(dir.path(), wide);
        let key = SeriesKey::Topic("t".into());
        for minute in 0..120 {
            files.write(&key, &topic_record(minute)).expect("write");
        }
        let path = files.path(&key);
        let file = OpenOptions::new().write(true).open(&path).expect("open");
        file.write_all_at(&[0xFF; 4], 5 * 69 + 10).expect("tear");
        let narrow = HistoryFiles::new(dir.path(), RetentionMinutes::new(60).expect("valid"));
        let loaded = narrow.load().expect("load");
        let minutes: Vec<u64> = loaded.topics[0].1.iter().map(|r| r.minute).collect();
        assert_eq!(minutes, (0..60).filter(|m| *m != 5).collect::<Vec<_>>());
        assert_eq!(fs::metadata(&path).expect("size").len(), 60 * 69);
        narrow.remove(&key).expect("remove");
        assert_eq!(narrow.load().expect("load").topics.len(), 0);
    }
}
