//! Applying a command to the cluster state: check every rule first, then change.

use super::command::Command;
use super::node::{NodeRecord, NodeState};
use super::placement::PartitionPlacement;
use super::state::{ClusterState, PartitionLeader, TopicRecord};
use crate::error::ClusterError;
use crate::subscription::SubscriptionConfig;
use crate::topic::TopicConfig;

impl ClusterState {
    /// Applies one committed command.
    ///
    /// Deterministic: the outcome depends only on the state and the command. A refused
    /// command changes nothing and returns why, so it is refused the same way on every node.
    /// Every rule is checked before anything changes; the state satisfies
    /// [`ClusterState::validate`] before and after.
    pub fn apply(&mut self, command: &Command) -> Result<(), ClusterError> {
        match command {
            Command::UpsertNode(record) => self.upsert_node(record)?,
            Command::DrainNode { id } => self.drain_node(*id)?,
            Command::RemoveNode { id } => self.remove_node(*id)?,
            Command::CreateTopic(record) => self.create_topic(record)?,
            Command::UpdateTopic { config } => self.update_topic(config)?,
            Command::DeleteTopic { name } => self.delete_topic(name)?,
            Command::CreateSubscription(config) => self.create_subscription(config)?,
            Command::UpdateSubscription(config) => self.update_subscription(config)?,
            Command::DeleteSubscription { topic, name } => self.delete_subscription(topic, name)?,
            Command::SetPlacement {
                topic,
                partition,
                replicas,
            } => self.set_placement(topic, *partition, replicas)?,
            Command::SetPartitionLeader {
                topic,
                uid,
                partition,
                node,
                term,
            } => self.set_partition_leader(topic, *uid, *partition, *node, *term)?,
            Command::PutAlertRule { name, rule } => {
                self.alert_rules.insert(name.clone(), rule.clone());
            }
            Command::DeleteAlertRule { name } => {
                self.alert_rules.remove(name);
            }
        }
        debug_assert_eq!(self.validate(), Ok(()), "after {command:?}");
        Ok(())
    }

    fn upsert_node(&mut self, record: &NodeRecord) -> Result<(), ClusterError> {
        let holder = self
            .nodes
            .values()
            .find(|n| n.id != record.id && n.cluster_addr == record.cluster_addr);
        if let Some(holder) = holder {
            return Err(ClusterError::AddressInUse {
                node: record.id,
                addr: record.cluster_addr.clone(),
                holder: holder.id,
            });
        }
        let was_active = self
            .nodes
            .get(&record.id)
            .is_some_and(NodeRecord::is_active);
        let is_new = !self.nodes.contains_key(&record.id);
        if !record.is_active() && (was_active || is_new) {
            // An Active node set Draining, or a new node that joins Draining, leaves the
            // Active nodes as a drain does: hold it to the same rules.
            self.check_leaving_active(record.id, false)?;
        }
        self.nodes.insert(record.id, record.clone());
        Ok(())
    }

    fn drain_node(&mut self, id: u64) -> Result<(), ClusterError> {
        let node = self.known_node(id)?;
        if node.is_active() {
            self.check_leaving_active(id, false)?;
        }
        if let Some(node) = self.nodes.get_mut(&id) {
            node.state = NodeState::Draining;
        }
        Ok(())
    }

    fn remove_node(&mut self, id: u64) -> Result<(), ClusterError> {
        let node = self.known_node(id)?;
        if let Some((topic, partition)) = self.first_replica_on(id) {
            return Err(ClusterError::NodeStillHoldsReplicas {
                node: id,
                topic: topic.to_owned(),
                partition,
            });
        }
        if self.nodes.len() == 1 {
            return Err(ClusterError::LastNode { node: id });
        }
        if node.is_active() {
            self.check_leaving_active(id, false)?;
        }
        self.nodes.remove(&id);
        Ok(())
    }

    /// Checks that the Active nodes left after `node` is (or stays) `active` are at least
    /// one and at least every topic's replication factor.
    fn check_leaving_active(&self, node: u64, active: bool) -> Result<(), ClusterError> {
        let others = self
            .nodes
            .values()
            .filter(|n| n.id != node && n.is_active())
            .count();
        let active_after = others + usize::from(active);
        if active_after == 0 {
            return Err(ClusterError::LastNode { node });
        }
        let needy = self
            .topics
            .values()
            .map(|t| &t.config)
            .find(|c| c.replication_factor as usize > active_after);
        match needy {
            Some(config) => Err(ClusterError::TooFewActiveNodes {
                node,
                topic: config.name.clone(),
                replication_factor: config.replication_factor,
                active_after,
            }),
            None => Ok(()),
        }
    }

    fn known_node(&self, id: u64) -> Result<&NodeRecord, ClusterError> {
        self.nodes
            .get(&id)
            .ok_or(ClusterError::UnknownNode { node: id })
    }

    fn create_topic(&mut self, record: &TopicRecord) -> Result<(), ClusterError> {
        let name = &record.config.name;
        if self.topics.contains_key(name) {
            return Err(ClusterError::TopicExists {
                topic: name.clone(),
            });
        }
        self.check_topic(record, true)?;
        self.topics.insert(name.clone(), record.clone());
        Ok(())
    }

    fn update_topic(&mut self, config: &TopicConfig) -> Result<(), ClusterError> {
        let topic = self.known_topic(&config.name)?;
        let stored = &topic.config;
        let fixed = [
            (
                "partitions",
                stored.partitions.into(),
                config.partitions.into(),
            ),
            (
                "replication_factor",
                stored.replication_factor.into(),
                config.replication_factor.into(),
            ),
            ("uid", stored.uid, config.uid),
            ("created_ms", stored.created_ms, config.created_ms),
        ];
        if let Some((field, stored, proposed)) = fixed.into_iter().find(|(_, s, p)| s != p) {
            return Err(ClusterError::ImmutableTopicField {
                topic: config.name.clone(),
                field,
                stored,
                proposed,
            });
        }
        if let Some(topic) = self.topics.get_mut(&config.name) {
            topic.config = config.clone();
        }
        Ok(())
    }

    fn delete_topic(&mut self, name: &str) -> Result<(), ClusterError> {
        self.known_topic(name)?;
        self.topics.remove(name);
        self.subscriptions.remove(name);
        self.leaders.remove(name);
        self.moved.remove(name);
        Ok(())
    }

    fn known_topic(&self, name: &str) -> Result<&TopicRecord, ClusterError> {
        self.topics
            .get(name)
            .ok_or_else(|| ClusterError::TopicNotFound {
                topic: name.to_owned(),
            })
    }

    fn create_subscription(&mut self, config: &SubscriptionConfig) -> Result<(), ClusterError> {
        self.known_topic(&config.topic)?;
        if self.subscription(&config.topic, &config.name).is_some() {
            return Err(ClusterError::SubscriptionExists {
                topic: config.topic.clone(),
                name: config.name.clone(),
            });
        }
        self.subscriptions
            .entry(config.topic.clone())
            .or_default()
            .insert(config.name.clone(), config.clone());
        Ok(())
    }

    fn update_subscription(&mut self, config: &SubscriptionConfig) -> Result<(), ClusterError> {
        let stored = self.known_subscription(&config.topic, &config.name)?;
        let fixed = [
            ("uid", stored.uid, config.uid),
            ("created_ms", stored.created_ms, config.created_ms),
        ];
        if let Some((field, stored, proposed)) = fixed.into_iter().find(|(_, s, p)| s != p) {
            return Err(ClusterError::ImmutableSubscriptionField {
                topic: config.topic.clone(),
                name: config.name.clone(),
                field,
                stored,
                proposed,
            });
        }
        if let Some(subs) = self.subscriptions.get_mut(&config.topic) {
            subs.insert(config.name.clone(), config.clone());
        }
        Ok(())
    }

    fn delete_subscription(&mut self, topic: &str, name: &str) -> Result<(), ClusterError> {
        self.known_subscription(topic, name)?;
        if let Some(subs) = self.subscriptions.get_mut(topic) {
            subs.remove(name);
            if subs.is_empty() {
                self.subscriptions.remove(topic);
            }
        }
        Ok(())
    }

    fn known_subscription(
        &self,
        topic: &str,
        name: &str,
    ) -> Result<&SubscriptionConfig, ClusterError> {
        self.known_topic(topic)?;
        self.subscription(topic, name)
            .ok_or_else(|| ClusterError::SubscriptionNotFound {
                topic: topic.to_owned(),
                name: name.to_owned(),
            })
    }

    fn set_placement(
        &mut self,
        topic: &str,
        partition: u32,
        replicas: &[u64],
    ) -> Result<(), ClusterError> {
        let record = self.known_topic(topic)?;
        let current = record.placement.get(partition as usize).ok_or_else(|| {
            ClusterError::PartitionNotFound {
                topic: topic.to_owned(),
                partition,
                partitions: record.config.partitions,
            }
        })?;
        let admitted = |node| current.replicas.contains(&node);
        self.check_replicas(&record.config, partition, replicas, admitted)?;
        if let Some(slot) = self
            .topics
            .get_mut(topic)
            .and_then(|t| t.placement.get_mut(partition as usize))
        {
            if slot.replicas != replicas {
                self.moved
                    .entry(topic.to_owned())
                    .or_default()
                    .insert(partition);
            }
            *slot = PartitionPlacement {
                replicas: replicas.to_vec(),
            };
        }
        Ok(())
    }

    fn set_partition_leader(
        &mut self,
        topic: &str,
        uid: u64,
        partition: u32,
        node: u64,
        term: u64,
    ) -> Result<(), ClusterError> {
        let record = self.known_topic(topic)?;
        let stale = ClusterError::StaleLeaderReport {
            topic: topic.to_owned(),
            partition,
            term,
        };
        if record.config.uid != uid {
            return Err(stale);
        }
        if partition >= record.config.partitions {
            return Err(ClusterError::PartitionNotFound {
                topic: topic.to_owned(),
                partition,
                partitions: record.config.partitions,
            });
        }
        self.known_node(node)?;
        if self
            .partition_leader(topic, partition)
            .is_some_and(|l| l.term > term)
        {
            return Err(stale);
        }
        self.leaders
            .entry(topic.to_owned())
            .or_default()
            .insert(partition, PartitionLeader { node, term });
        Ok(())
    }
}
