//! Opening a broker on a folder a previous one just let go of (the broker tests, and the
//! broker runs of the storage power-loss test).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use broker_core::config::FsyncPolicy;
use broker_core::{Broker, BrokerConfig};

/// Opens a broker on `dir` with `fsync`, waiting (at most 10 s) for the last one's sled
/// threads to let go of the folder's lock.
pub async fn open(dir: &Path, fsync: FsyncPolicy) -> Arc<Broker> {
    let mut config = BrokerConfig::new(dir);
    config.log.fsync = fsync;
    open_with(config).await
}

/// Opens a broker with `config`, waiting (at most 10 s) as [`open`] does.
pub async fn open_with(config: BrokerConfig) -> Arc<Broker> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match Broker::open(config.clone()).await {
            Ok(broker) => return broker,
            Err(error) if Instant::now() < deadline => {
                eprintln!("retrying the open: {error}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("open: {error}"),
        }
    }
}
