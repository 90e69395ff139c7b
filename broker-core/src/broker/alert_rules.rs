//! What the broker keeps for the gateway's alerts: the rules, stored as opaque bytes in the
//! metadata store (the broker does not read them), and the figures rules sample that only the
//! broker sees (when a subscription was last received from, the disk's used share).

use super::Broker;
use crate::error::Result;

impl Broker {
    /// Every stored alert rule, `(name, bytes)` in name order, as
    /// [`Broker::save_alert_rule`] stored them.
    pub fn alert_rules(&self) -> Result<Vec<(String, Vec<u8>)>> {
        self.metadata.alert_rules()
    }

    /// Stores (or replaces) an alert rule under `name`, durable (fsynced) before returning.
    pub async fn save_alert_rule(&self, name: &str, bytes: &[u8]) -> Result<()> {
        self.check_running()?;
        self.metadata.save_alert_rule(name, bytes)?;
        self.persist().await
    }

    /// Forgets the alert rule `name`, durable before returning; whether it was stored.
    pub async fn remove_alert_rule(&self, name: &str) -> Result<bool> {
        self.check_running()?;
        let removed = self.metadata.remove_alert_rule(name)?;
        if removed {
            self.persist().await?;
        }
        Ok(removed)
    }

    /// Steady ms ([`crate::clock::steady_ms`]) at which a receive (a stream's included) last
    /// reached subscription `name` of `topic` on this node, `None` if none has since the
    /// node started. Kept in memory only.
    pub fn last_receive_ms(&self, topic: &str, name: &str) -> Result<Option<u64>> {
        let open = self.topic(topic)?;
        let subscription = self.subscription_in(&open, name)?;
        Ok(subscription.counters.last_receive_ms())
    }

    /// The share of the data folder's file system in use, 0 to 1, `None` if the file system
    /// cannot be asked. One `statvfs`.
    pub fn used_disk_share(&self) -> Option<f64> {
        crate::disk_space::used_share(&self.config.data_dir)
    }
}
