//! Server errors: replies with a 5xx status other than 503 (unavailable, retry) and 507 (storage
//! full), the two a client is told to expect.

use serde::Serialize;

use crate::history::History;
use crate::offenders::Offenders;

/// Which kind of operation got the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// A produce.
    Produce,
    /// An ack.
    Ack,
}

/// A reply with an unexpected 5xx status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerError {
    /// The operation.
    pub operation: Operation,
    /// The value it carried.
    pub value: String,
    /// The status.
    pub status: u16,
}

/// Whether `status` is a 5xx other than 503 and 507.
pub fn is_unexpected_5xx(status: u16) -> bool {
    (500..600).contains(&status) && status != 503 && status != 507
}

/// Every produce and ack reply with a 5xx other than 503 and 507, produces first.
pub fn check(history: &History) -> Offenders<ServerError> {
    let produces = history
        .produces
        .iter()
        .map(|p| (Operation::Produce, &p.value, p.status));
    let acks = history
        .acks
        .iter()
        .map(|a| (Operation::Ack, &a.value, a.status));
    produces
        .chain(acks)
        .filter_map(|(operation, value, status)| {
            let status = status.filter(|&s| is_unexpected_5xx(s))?;
            Some(ServerError {
                operation,
                value: value.clone(),
                status,
            })
        })
        .collect()
}
