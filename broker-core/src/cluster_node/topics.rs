//! Creating and deleting topics and subscriptions through the controller: this node must
//! lead it; the change is validated against the metadata, proposed, and answered once this
//! node serves (or no longer serves) what it asked for.

use super::{ADMIN_WAIT_MS, ClusterNode};
use crate::broker::SubscriptionInfo;
use crate::cluster::{Command, PlacementLoad, TopicRecord, place, place_led_by};
use crate::error::{BrokerError, Result};
use crate::subscription::SubscriptionSpec;
use crate::topic::{TopicInfo, TopicSpec};

impl ClusterNode {
    /// Creates a topic through the controller (this node must lead it): validated against the
    /// metadata, placed, proposed, and answered once this node serves it.
    pub async fn create_topic(&self, spec: TopicSpec) -> Result<TopicInfo> {
        self.create_placed(spec, None).await
    }

    /// As [`ClusterNode::create_topic`], for a topic of one partition that belongs to node
    /// `leader` (its synthetic probe's): `leader` holds a replica and is its preferred leader.
    pub async fn create_topic_led_by(&self, spec: TopicSpec, leader: u64) -> Result<TopicInfo> {
        self.create_placed(spec, Some(leader)).await
    }

    async fn create_placed(&self, spec: TopicSpec, leader: Option<u64>) -> Result<TopicInfo> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        let state = self.state();
        let active = state.active_nodes();
        let nodes = active.len() as u32;
        let voters = self.voters();
        if nodes < voters {
            // A topic placed before every voter registered would leave some out for good.
            return Err(BrokerError::NotLeader {
                what: format!("cluster metadata ({nodes} of {voters} nodes registered)"),
                leader: None,
            });
        }
        let uid = rand::random::<u64>();
        let config = spec.into_config_keeping(crate::clock::now_ms(), uid, nodes)?;
        if state.topic(&config.name).is_some() {
            return Err(BrokerError::TopicExists { topic: config.name });
        }
        let factor = config.replication_factor;
        let load = PlacementLoad::of(&state);
        let placement = match leader {
            None => place(&active, &load, config.partitions, factor),
            Some(_) if config.partitions != 1 => {
                return Err(BrokerError::invalid(
                    "partitions",
                    "a topic led by one node has one partition",
                ));
            }
            Some(node) => place_led_by(&active, &load, factor, node).map(|p| vec![p]),
        }
        .map_err(|e| BrokerError::invalid("replication_factor", e.to_string()))?;
        let name = config.name.clone();
        let command = Command::CreateTopic(TopicRecord { config, placement });
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || self.broker.topic_uid(&name) == Some(uid))
            .await?;
        // Answer once every partition has a leader, so a produce right after the create
        // finds one; a group still electing after the wait is reported as leaderless.
        let partitions = self
            .state()
            .topic(&name)
            .map_or(0, |t| t.placement.len() as u32);
        let led = || (0..partitions).all(|p| self.broker.partition_leader(&name, p).is_some());
        if self.wait_for(ADMIN_WAIT_MS, led).await.is_err() {
            tracing::warn!(topic = %name, "a partition of a new topic has no leader yet");
        }
        self.broker.describe_topic(&name)
    }

    /// Deletes a topic through the controller (this node must lead it), answered once this
    /// node no longer serves it.
    pub async fn delete_topic(&self, name: &str) -> Result<()> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        if self.state().topic(name).is_none() {
            return Err(BrokerError::TopicNotFound { topic: name.into() });
        }
        self.propose(&Command::DeleteTopic { name: name.into() })
            .await?;
        self.wait_for(ADMIN_WAIT_MS, || self.broker.topic_uid(name).is_none())
            .await
    }

    /// Creates a subscription through the controller (this node must lead it), and its
    /// dead-letter topic when the metadata has none (with at least as many partitions as
    /// nodes, so that most nodes lead one of them: a node moves dead letters only to a
    /// dead-letter partition it leads). Answered once this node has it open and every
    /// partition's leader has given it its start.
    pub async fn create_subscription(
        &self,
        topic: &str,
        spec: SubscriptionSpec,
    ) -> Result<SubscriptionInfo> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        let state = self.state();
        let Some(source) = state.topic(topic) else {
            return Err(BrokerError::TopicNotFound {
                topic: topic.to_owned(),
            });
        };
        let uid = rand::random::<u64>();
        let config = spec.into_config(topic, crate::clock::now_ms(), uid)?;
        if state.subscription(topic, &config.name).is_some() {
            return Err(BrokerError::SubscriptionExists {
                topic: topic.to_owned(),
                subscription: config.name,
            });
        }
        if state.topic(&config.dead_letter_topic).is_none() {
            let nodes = state.active_nodes().len() as u32;
            let dead_letters = TopicSpec {
                name: config.dead_letter_topic.clone(),
                partitions: Some(source.config.partitions.max(nodes)),
                max_message_bytes: Some(source.config.max_message_bytes),
                // An internal topic's subscription may name an internal dead-letter topic.
                internal: crate::names::is_internal(&config.dead_letter_topic),
                ..TopicSpec::default()
            };
            match self.create_topic(dead_letters).await {
                Ok(_) | Err(BrokerError::TopicExists { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        let name = config.name.clone();
        self.propose(&Command::CreateSubscription(config)).await?;
        self.wait_for(ADMIN_WAIT_MS, || {
            self.broker.subscription_uid(topic, &name) == Some(uid)
        })
        .await?;
        self.broker
            .wait_subscription_started(topic, &name, uid, ADMIN_WAIT_MS)
            .await?;
        self.broker.describe_subscription(topic, &name).await
    }

    /// Deletes a subscription through the controller (this node must lead it), answered once
    /// this node no longer has it.
    pub async fn delete_subscription(&self, topic: &str, name: &str) -> Result<()> {
        if self.controller_leader() != Some(self.node_id()) {
            return Err(self.not_controller_leader());
        }
        let state = self.state();
        if state.topic(topic).is_none() {
            return Err(BrokerError::TopicNotFound {
                topic: topic.to_owned(),
            });
        }
        if state.subscription(topic, name).is_none() {
            return Err(BrokerError::SubscriptionNotFound {
                topic: topic.to_owned(),
                subscription: name.to_owned(),
            });
        }
        let command = Command::DeleteSubscription {
            topic: topic.to_owned(),
            name: name.to_owned(),
        };
        self.propose(&command).await?;
        self.wait_for(ADMIN_WAIT_MS, || {
            self.broker.subscription_uid(topic, name).is_none()
        })
        .await
    }
}
