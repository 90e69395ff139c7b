//! The probes' wire types: a health check's answer.

use serde::Serialize;
use utoipa::ToSchema;

use crate::governance::probe::ProbeStatus;

/// A health check's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthStatus {
    /// `ok` (liveness) or `ready` (readiness).
    pub status: &'static str,
    /// Readiness only: the synthetic probe's last outcome (its state is shown, not judged:
    /// a failing probe leaves the node ready).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeStatus>,
}
