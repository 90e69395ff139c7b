//! [`RuleBook`]: the rules of this node, in memory for the evaluator and the routes, written
//! through to the broker's metadata store ([`broker_core::Broker::save_alert_rule`]) before
//! a change is visible, so they survive a restart.
//!
//! On a cluster node the rules are cluster metadata instead
//! ([`broker_core::cluster::Command::PutAlertRule`]): every node reads them from its copy of
//! the metadata, and a change goes through the controller leader
//! ([`ClusterNode::create_alert_rule`]; another node answers `not_leader` naming it, and the
//! gateway forwards there). They survive restarts with the controller's log.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use broker_core::Broker;
use broker_core::cluster_node::ClusterNode;
use broker_core::sync::{read, write};
use serde::{Deserialize, Serialize};

use super::rule::{AlertRule, ValidRule};
use super::webhook_policy::WebhookPolicy;
use crate::http::problem::ApiError;

/// A rule as stored: the rule (whose serialized form leaves its secret out, as every answer
/// must) and the secret beside it.
#[derive(Debug, Serialize, Deserialize)]
struct StoredRule {
    rule: AlertRule,
    secret: Option<String>,
}

/// The node's rules by name.
#[derive(Default)]
pub struct RuleBook {
    rules: RwLock<BTreeMap<String, ValidRule>>,
    /// Serializes changes, so "exists?" and "store" are one step.
    turn: tokio::sync::Mutex<()>,
    /// On a cluster node: where the rules are, and the policy they are checked against
    /// when read; `rules` then caches the last metadata read (`seen`: its encoded rules).
    cluster: Option<(Arc<ClusterNode>, WebhookPolicy)>,
    seen: RwLock<Vec<(String, String)>>,
}

impl std::fmt::Debug for RuleBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleBook")
            .field("rules", &self.rules)
            .field("clustered", &self.cluster.is_some())
            .finish_non_exhaustive()
    }
}

/// A stored rule's bytes back into a rule, `None` (with a warning naming it) if they cannot
/// be read or the rule no longer passes validation (the operator narrowed the webhook
/// allow-list since).
fn decode(name: &str, bytes: &[u8], policy: &WebhookPolicy) -> Option<ValidRule> {
    let stored: StoredRule = match serde_json::from_slice(bytes) {
        Ok(stored) => stored,
        Err(error) => {
            tracing::warn!(rule = name, %error, "a stored alert rule cannot be read; skipped");
            return None;
        }
    };
    let mut rule = stored.rule;
    rule.secret = stored.secret;
    match rule.validate(policy) {
        Ok(valid) => Some(valid),
        Err(error) => {
            tracing::warn!(rule = name, %error, "a stored alert rule is no longer valid; not evaluated");
            None
        }
    }
}

/// A rule as the text it is stored as, with its secret.
fn encode(rule: &ValidRule) -> Result<String, ApiError> {
    let stored = StoredRule {
        rule: rule.rule().clone(),
        secret: rule.secret().map(str::to_owned),
    };
    serde_json::to_string(&stored).map_err(|error| ApiError::Internal {
        detail: format!("encoding an alert rule: {error}"),
    })
}

impl RuleBook {
    /// The rules stored in `broker`'s metadata. A stored rule that no longer passes
    /// validation (the operator narrowed the webhook allow-list since) is kept on disk but
    /// not evaluated, and a warning names it.
    pub fn load(broker: &Broker, policy: &WebhookPolicy) -> Result<RuleBook, ApiError> {
        let mut rules = BTreeMap::new();
        for (name, bytes) in broker.alert_rules()? {
            if let Some(valid) = decode(&name, &bytes, policy) {
                rules.insert(name, valid);
            }
        }
        Ok(RuleBook {
            rules: RwLock::new(rules),
            ..RuleBook::default()
        })
    }

    /// The rules of cluster node `node`, in its copy of the cluster metadata, checked against
    /// `policy` as they are read.
    pub fn clustered(node: Arc<ClusterNode>, policy: WebhookPolicy) -> RuleBook {
        RuleBook {
            cluster: Some((node, policy)),
            ..RuleBook::default()
        }
    }

    /// On a cluster node, brings the cache in line with the metadata (decoding only when
    /// the metadata's rules changed, so a rule that no longer validates is warned about once).
    fn refresh(&self) {
        let Some((node, policy)) = &self.cluster else {
            return;
        };
        let current = node.alert_rules();
        if *read(&self.seen) == current {
            return;
        }
        let rules = current
            .iter()
            .filter_map(|(name, text)| {
                decode(name, text.as_bytes(), policy).map(|rule| (name.clone(), rule))
            })
            .collect();
        *write(&self.rules) = rules;
        *write(&self.seen) = current;
    }

    /// Every rule, in name order.
    pub fn all(&self) -> Vec<ValidRule> {
        self.refresh();
        read(&self.rules).values().cloned().collect()
    }

    /// The rule `name`.
    pub fn get(&self, name: &str) -> Result<ValidRule, ApiError> {
        self.refresh();
        read(&self.rules)
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::AlertRuleNotFound {
                name: name.to_owned(),
            })
    }

    /// Stores a new rule durably, then shows it; [`ApiError::AlertRuleExists`] if the name
    /// is taken. On a cluster node, through the controller leader (`not_leader` elsewhere).
    pub async fn create(&self, broker: &Broker, rule: ValidRule) -> Result<(), ApiError> {
        let _turn = self.turn.lock().await;
        let exists = || ApiError::AlertRuleExists {
            name: rule.name().to_owned(),
        };
        if let Some((node, _)) = &self.cluster {
            return match node.create_alert_rule(rule.name(), encode(&rule)?).await? {
                true => Ok(()),
                false => Err(exists()),
            };
        }
        if read(&self.rules).contains_key(rule.name()) {
            return Err(exists());
        }
        let text = encode(&rule)?;
        broker.save_alert_rule(rule.name(), text.as_bytes()).await?;
        write(&self.rules).insert(rule.name().to_owned(), rule);
        Ok(())
    }

    /// Deletes the rule `name` durably; [`ApiError::AlertRuleNotFound`] if there is none. On
    /// a cluster node, through the controller leader (`not_leader` elsewhere).
    pub async fn delete(&self, broker: &Broker, name: &str) -> Result<(), ApiError> {
        let _turn = self.turn.lock().await;
        if let Some((node, _)) = &self.cluster {
            return match node.delete_alert_rule(name).await? {
                true => Ok(()),
                false => Err(ApiError::AlertRuleNotFound {
                    name: name.to_owned(),
                }),
            };
        }
        let known = read(&self.rules).contains_key(name);
        let stored = broker.remove_alert_rule(name).await?;
        if !known && !stored {
            return Err(ApiError::AlertRuleNotFound {
                name: name.to_owned(),
            });
        }
        write(&self.rules).remove(name);
        Ok(())
    }
}
