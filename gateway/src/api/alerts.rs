//! Alerts' wire types: the path of a rule, the list of rules and of the alerts firing now.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::governance::alerts::{ActiveAlert, AlertRule};

/// Path of an alert rule.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct RulePath {
    /// The rule's name.
    pub name: String,
}

/// Every alert rule.
#[derive(Debug, Serialize, ToSchema)]
pub struct AlertRuleList {
    /// The rules, in name order (secrets left out).
    pub rules: Vec<AlertRule>,
}

/// The alerts firing now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActiveAlertList {
    /// The alerts, in rule name order, as of the last evaluation (at most one tick old).
    pub alerts: Vec<ActiveAlert>,
}
