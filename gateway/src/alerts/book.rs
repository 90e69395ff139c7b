//! [`RuleBook`]: the rules of this node, in memory for the evaluator and the routes, written
//! through to the broker's metadata store ([`broker_core::Broker::save_alert_rule`]) before
//! a change is visible, so they survive a restart.

use std::collections::BTreeMap;
use std::sync::RwLock;

use broker_core::Broker;
use broker_core::sync::{read, write};
use serde::{Deserialize, Serialize};

use super::rule::{AlertRule, ValidRule};
use super::webhook_policy::WebhookPolicy;
use crate::problem::ApiError;

/// A rule as stored: the rule (whose serialized form leaves its secret out, as every answer
/// must) and the secret beside it.
#[derive(Debug, Serialize, Deserialize)]
struct StoredRule {
    rule: AlertRule,
    secret: Option<String>,
}

/// The node's rules by name.
#[derive(Debug, Default)]
pub struct RuleBook {
    rules: RwLock<BTreeMap<String, ValidRule>>,
    /// Serializes changes, so "exists?" and "store" are one step.
    turn: tokio::sync::Mutex<()>,
}

impl RuleBook {
    /// The rules stored in `broker`'s metadata. A stored rule that no longer passes
    /// validation (the operator narrowed the webhook allow-list since) is kept on disk but
    /// not evaluated, and a warning names it.
    pub fn load(broker: &Broker, policy: &WebhookPolicy) -> Result<RuleBook, ApiError> {
        let mut rules = BTreeMap::new();
        for (name, bytes) in broker.alert_rules()? {
            let stored: StoredRule = match serde_json::from_slice(&bytes) {
                Ok(stored) => stored,
                Err(error) => {
                    tracing::warn!(rule = name, %error, "a stored alert rule cannot be read; skipped");
                    continue;
                }
            };
            let mut rule = stored.rule;
            rule.secret = stored.secret;
            match rule.validate(policy) {
                Ok(valid) => {
                    rules.insert(name, valid);
                }
                Err(error) => {
                    tracing::warn!(rule = name, %error, "a stored alert rule is no longer valid; not evaluated");
                }
            }
        }
        Ok(RuleBook {
            rules: RwLock::new(rules),
            turn: tokio::sync::Mutex::new(()),
        })
    }

    /// Every rule, in name order.
    pub fn all(&self) -> Vec<ValidRule> {
        read(&self.rules).values().cloned().collect()
    }

    /// The rule `name`.
    pub fn get(&self, name: &str) -> Result<ValidRule, ApiError> {
        read(&self.rules)
            .get(name)
            .cloned()
            .ok_or_else(|| ApiError::AlertRuleNotFound {
                name: name.to_owned(),
            })
    }

    /// Stores a new rule durably, then shows it; [`ApiError::AlertRuleExists`] if the name
    /// is taken.
    pub async fn create(&self, broker: &Broker, rule: ValidRule) -> Result<(), ApiError> {
        let _turn = self.turn.lock().await;
        if read(&self.rules).contains_key(rule.name()) {
            return Err(ApiError::AlertRuleExists {
                name: rule.name().to_owned(),
            });
        }
        let stored = StoredRule {
            rule: rule.rule().clone(),
            secret: rule.secret().map(str::to_owned),
        };
        let bytes = serde_json::to_vec(&stored).map_err(|error| ApiError::Internal {
            detail: format!("encoding an alert rule: {error}"),
        })?;
        broker.save_alert_rule(rule.name(), &bytes).await?;
        write(&self.rules).insert(rule.name().to_owned(), rule);
        Ok(())
    }

    /// Deletes the rule `name` durably; [`ApiError::AlertRuleNotFound`] if there is none.
    pub async fn delete(&self, broker: &Broker, name: &str) -> Result<(), ApiError> {
        let _turn = self.turn.lock().await;
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
