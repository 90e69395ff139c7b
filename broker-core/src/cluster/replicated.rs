//! [`ClusterState`] as the controller group's replicated [`Metadata`]: committed commands are
//! JSON [`Command`]s applied in log order; a command that does not decode or that the state
//! refuses changes nothing, on every node alike.

use super::{ClusterState, Command};
use crate::error::BrokerError;
use crate::raft::Metadata;

impl Metadata for ClusterState {
    fn apply(&mut self, index: u64, bytes: &[u8]) {
        let command: Command = match serde_json::from_slice(bytes) {
            Ok(command) => command,
            Err(error) => {
                tracing::warn!(index, %error, "a controller entry is not a command; skipped");
                return;
            }
        };
        if let Err(error) = ClusterState::apply(self, &command) {
            tracing::info!(index, %error, "the cluster metadata refused a command");
        }
    }

    fn snapshot(&self) -> Result<Vec<u8>, BrokerError> {
        serde_json::to_vec(self).map_err(|e| BrokerError::invalid("cluster state", e.to_string()))
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), BrokerError> {
        let state: ClusterState = serde_json::from_slice(bytes)
            .map_err(|e| BrokerError::invalid("cluster state", e.to_string()))?;
        state
            .validate()
            .map_err(|e| BrokerError::invalid("cluster state", e.to_string()))?;
        *self = state;
        Ok(())
    }
}

/// A command as the bytes the controller log holds.
pub fn encode_command(command: &Command) -> Result<bytes::Bytes, BrokerError> {
    serde_json::to_vec(command)
        .map(bytes::Bytes::from)
        .map_err(|e| BrokerError::invalid("command", e.to_string()))
}
