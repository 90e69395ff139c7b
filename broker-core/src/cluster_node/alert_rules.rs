//! The gateway's alert rules (opaque here) as cluster metadata: read as this node has applied
//! it, stored and forgotten through the controller leader.

use super::{ADMIN_WAIT_MS, ClusterNode};
use crate::cluster::Command;
use crate::error::Result;

impl ClusterNode {
    /// Every alert rule in the metadata, `(name, encoded rule)` in name order, as this node
    /// has applied it.
    pub fn alert_rules(&self) -> Vec<(String, String)> {
        self.controller.machine.read(|state| {
            state
                .alert_rules()
                .iter()
                .map(|(name, rule)| (name.clone(), rule.clone()))
                .collect()
        })
    }

    /// Stores a new alert rule through the controller (this node must lead it), answered
    /// once this node has applied it: `false` (nothing proposed) if a rule of that name
    /// exists. `rule` is opaque to the broker.
    pub async fn create_alert_rule(&self, name: &str, rule: String) -> Result<bool> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        if self.state_has_alert_rule(name) {
            return Ok(false);
        }
        let command = Command::PutAlertRule {
            name: name.to_owned(),
            rule,
        };
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || self.state_has_alert_rule(name))
            .await?;
        Ok(true)
    }

    /// Forgets an alert rule through the controller (this node must lead it), answered once
    /// this node has applied it: `false` (nothing proposed) if there is none.
    pub async fn delete_alert_rule(&self, name: &str) -> Result<bool> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        if !self.state_has_alert_rule(name) {
            return Ok(false);
        }
        let command = Command::DeleteAlertRule {
            name: name.to_owned(),
        };
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || !self.state_has_alert_rule(name))
            .await?;
        Ok(true)
    }

    /// Whether the metadata as this node has applied it holds an alert rule named `name`.
    fn state_has_alert_rule(&self, name: &str) -> bool {
        self.controller
            .machine
            .read(|state| state.alert_rule(name).is_some())
    }
}
