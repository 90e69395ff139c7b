//! Alerts: create, list, describe and delete alert rules, and list the alerts firing now.
//! Rules are kept on this node ([`crate::governance::alerts::RuleBook`]), or in a cluster as cluster
//! metadata: any node answers, a change is forwarded to the controller leader, and the
//! active alerts are the evaluating node's (the controller leader's; others forward there).
//! A rule cannot be changed in place: delete it and create it again (`409
//! alert_rule_exists` otherwise).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use broker_core::BrokerError;

use crate::api::alerts::{ActiveAlertList, AlertRuleList, RulePath};
use crate::app::AppState;
use crate::governance::alerts::{AlertRule, ValidRule};
use crate::http::extract::{JsonBody, PathParams};
use crate::http::problem::{ApiError, Problem};

/// Create an alert rule.
///
/// Validated, stored durably, then evaluated from the next tick. Its firing and resolved
/// events are posted to `webhook_url`, signed in `Wharf-Signature` with the rule's `secret`
/// (or the server's). The answer never shows the secret. Needs `admin:*`. In a cluster the
/// rule is cluster metadata, created through the controller leader (any node forwards
/// there) and listed on every node once it has applied it; the controller leader evaluates
/// it and posts its events.
#[utoipa::path(post, path = "/v1/alerts/rules", tag = "alerts",
    request_body = AlertRule,
    responses(
        (status = 201, description = "Created", body = AlertRule),
        (status = 400, description = "An invalid field: kind, scope, threshold, for_ms, secret, a webhook URL that is not http(s) or not in the allow-list, an unknown topic or subscription (`invalid_request`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A rule of that name exists (`alert_rule_exists`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over `max_body_bytes` (`message_too_large`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Not JSON (`unsupported_media_type`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "A budget is spent (`overloaded`) or the server is shutting down; in a cluster, no controller leader, or it did not commit the change in time (`not_leader`, `replication_timeout`); see `Retry-After`",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn create_rule(
    State(state): State<AppState>,
    JsonBody(rule): JsonBody<AlertRule>,
) -> Result<(StatusCode, Json<AlertRule>), ApiError> {
    let valid = rule
        .validate(state.alerts.policy())
        .map_err(|error| ApiError::invalid(error.to_string()))?;
    check_scope_exists(&state, &valid).await?;
    state.alerts.book().create(&state.broker, valid).await?;
    Ok((StatusCode::CREATED, Json(rule)))
}

/// List the alert rules.
#[utoipa::path(get, path = "/v1/alerts/rules", tag = "alerts",
    responses(
        (status = 200, description = "The rules", body = AlertRuleList),
    ))]
pub(crate) async fn list_rules(
    State(state): State<AppState>,
) -> Result<Json<AlertRuleList>, ApiError> {
    let rules = state
        .alerts
        .book()
        .all()
        .iter()
        .map(|rule| rule.rule().clone())
        .collect();
    Ok(Json(AlertRuleList { rules }))
}

/// Describe an alert rule.
#[utoipa::path(get, path = "/v1/alerts/rules/{name}", tag = "alerts", params(RulePath),
    responses(
        (status = 200, description = "The rule", body = AlertRule),
        (status = 404, description = "No such rule (`alert_rule_not_found`)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn get_rule(
    State(state): State<AppState>,
    PathParams(path): PathParams<RulePath>,
) -> Result<Json<AlertRule>, ApiError> {
    Ok(Json(state.alerts.book().get(&path.name)?.rule().clone()))
}

/// Delete an alert rule.
///
/// A firing alert of the rule is resolved (its webhook gets the resolved event) at the
/// next tick.
#[utoipa::path(delete, path = "/v1/alerts/rules/{name}", tag = "alerts", params(RulePath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such rule (`alert_rule_not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "A budget is spent (`overloaded`) or the server is shutting down; in a cluster, no controller leader, or it did not commit the change in time (`not_leader`, `replication_timeout`); see `Retry-After`",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn delete_rule(
    State(state): State<AppState>,
    PathParams(path): PathParams<RulePath>,
) -> Result<StatusCode, ApiError> {
    state
        .alerts
        .book()
        .delete(&state.broker, &path.name)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List the alerts firing now.
///
/// The alerts of the rules, and while the node's synthetic probe fails the built-in alert
/// `__wharf.probe` (kind `probe`, its value the failures in a row; no rule, so no webhook:
/// create a `probe` rule for one).
///
/// In a cluster, the evaluating node's list (the controller leader's; any other node
/// forwards there).
#[utoipa::path(get, path = "/v1/alerts", tag = "alerts",
    responses(
        (status = 200, description = "The active alerts", body = ActiveAlertList),
        (status = 503, description = "A budget is spent (`overloaded`) or the server is shutting down; in a cluster, no controller leader is known to forward to (`not_leader`); see `Retry-After`",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn active_alerts(
    State(state): State<AppState>,
) -> Result<Json<ActiveAlertList>, ApiError> {
    if let Some(clustered) = state.alerts.clustered()
        && !clustered.evaluates()
    {
        // `not_leader` naming the evaluator: the forwarding layer asks it instead.
        return Err(ApiError::Broker(BrokerError::NotLeader {
            what: "alert evaluation".to_owned(),
            leader: clustered.node().controller_leader(),
        }));
    }
    Ok(Json(ActiveAlertList {
        alerts: state.alerts.active(),
    }))
}

/// A rule's topic and subscription must exist when it is created (a typo would otherwise
/// make a rule that never fires); 400 names the one missing.
async fn check_scope_exists(state: &AppState, rule: &ValidRule) -> Result<(), ApiError> {
    let given = rule.rule();
    let Some(topic) = given.topic.as_deref() else {
        return Ok(());
    };
    let missing = |error: BrokerError| match error {
        BrokerError::TopicNotFound { .. } => {
            ApiError::invalid(format!("topic: no topic named '{topic}'"))
        }
        BrokerError::SubscriptionNotFound { .. } => ApiError::invalid(format!(
            "subscription: topic '{topic}' has no subscription named '{}'",
            given.subscription.as_deref().unwrap_or_default()
        )),
        other => ApiError::Broker(other),
    };
    match given.subscription.as_deref() {
        Some(sub) => state
            .broker
            .describe_subscription(topic, sub)
            .await
            .map(drop)
            .map_err(missing),
        None => state
            .broker
            .describe_topic(topic)
            .map(drop)
            .map_err(missing),
    }
}
