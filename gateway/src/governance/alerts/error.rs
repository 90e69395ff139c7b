//! [`AlertError`]: the one error of the alerts module, each variant carrying the values that
//! failed.

use super::rule::AlertKind;

/// Why a rule, a webhook target, a sample or a signature was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AlertError {
    /// `name`, `topic` or `subscription` is not a valid name.
    #[error("{field}: {reason}")]
    InvalidName {
        /// The field at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The rule's kind needs a field that is absent.
    #[error("{field}: required for kind '{kind}'")]
    MissingField {
        /// The absent field.
        field: &'static str,
        /// The rule's kind.
        kind: AlertKind,
    },
    /// The rule's kind takes no such field, but it is present.
    #[error("{field}: not used by kind '{kind}'; leave it out")]
    UnexpectedField {
        /// The field given.
        field: &'static str,
        /// The rule's kind.
        kind: AlertKind,
    },
    /// `threshold` is NaN or infinite.
    #[error("threshold: must be a finite number, got {value}")]
    ThresholdNotFinite {
        /// The value given.
        value: f64,
    },
    /// `threshold` lies outside what the kind can measure.
    #[error("threshold: must be {min} to {max} for kind '{kind}', got {value}")]
    ThresholdOutOfRange {
        /// The rule's kind.
        kind: AlertKind,
        /// The value given.
        value: f64,
        /// The smallest value accepted.
        min: f64,
        /// The largest value accepted.
        max: f64,
    },
    /// `for_ms` lies outside its bounds.
    #[error("for_ms: must be {min} to {max} for kind '{kind}', got {value}")]
    ForMsOutOfRange {
        /// The rule's kind.
        kind: AlertKind,
        /// The value given.
        value: u64,
        /// The smallest value accepted.
        min: u64,
        /// The largest value accepted.
        max: u64,
    },
    /// `webhook_url` is longer than [`MAX_WEBHOOK_URL_BYTES`](super::rule::MAX_WEBHOOK_URL_BYTES).
    #[error("webhook_url: must be at most {max} bytes, got {len}")]
    WebhookUrlTooLong {
        /// Its length in bytes.
        len: usize,
        /// The longest accepted.
        max: usize,
    },
    /// `webhook_url` is not an absolute URL.
    #[error("webhook_url: not an absolute URL: {reason}")]
    WebhookUrlUnparsable {
        /// The parser's complaint.
        reason: String,
    },
    /// `webhook_url` has a scheme other than `http` or `https`.
    #[error("webhook_url: the scheme must be http or https, got '{scheme}'")]
    WebhookScheme {
        /// The scheme given.
        scheme: String,
    },
    /// `webhook_url` carries a user name or password.
    #[error(
        "webhook_url: must not carry a user name or password (they would be sent, and logged, \
         with every event)"
    )]
    WebhookUserinfo,
    /// `webhook_url` names no host.
    #[error("webhook_url: must name a host")]
    WebhookNoHost,
    /// `webhook_url`'s host and port match no pattern of the operator's allow-list.
    #[error("webhook_url: host {host} port {port} is not in the server's webhook allow-list")]
    WebhookHostNotAllowed {
        /// The URL's host.
        host: String,
        /// The URL's port (the scheme's default when the URL gives none).
        port: u16,
    },
    /// A per-rule `secret` is shorter or longer than accepted.
    #[error("secret: must be {min} to {max} bytes, got {len}")]
    SecretLength {
        /// Its length in bytes.
        len: usize,
        /// The shortest accepted.
        min: usize,
        /// The longest accepted.
        max: usize,
    },
    /// An allow-list entry is not a host pattern.
    #[error("webhook allow-list entry {pattern:?}: {reason}")]
    InvalidHostPattern {
        /// The entry.
        pattern: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A sample of the wrong shape for the rule's kind was evaluated (a bug in the caller).
    #[error("a sample of the wrong shape for kind '{kind}'")]
    SampleKindMismatch {
        /// The rule's kind.
        kind: AlertKind,
    },
    /// A sample's value is NaN or infinite (a bug in the caller).
    #[error("a sample's value must be finite, got {value}")]
    SampleNotFinite {
        /// The value given.
        value: f64,
    },
    /// A sample is older than the previous one (a bug in the caller: steady time does not go
    /// back).
    #[error("a sample at {now_ms} ms comes after one at {previous_ms} ms")]
    SampleOutOfOrder {
        /// The previous sample's time.
        previous_ms: u64,
        /// This sample's time.
        now_ms: u64,
    },
    /// A `Wharf-Signature` header is not `t=<secs>,v1=<hex>[,v1=<hex>…]`.
    #[error("malformed signature header: {reason}")]
    SignatureMalformed {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A signature's timestamp is further from now than the tolerance.
    #[error(
        "the signature's timestamp {signed_at_secs} is more than {tolerance_secs} s from now \
         ({now_secs})"
    )]
    SignatureExpired {
        /// The header's `t`.
        signed_at_secs: u64,
        /// The verifier's clock.
        now_secs: u64,
        /// The tolerance applied.
        tolerance_secs: u64,
    },
    /// No `v1` signature of the header matches the body and timestamp.
    #[error("no signature matches the body and timestamp")]
    SignatureMismatch,
}

impl AlertError {
    /// The request field at fault (`name`, `threshold`, `webhook_url`, …), when the error is
    /// about a rule's field; the route that creates rules puts it in its problem detail.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            AlertError::InvalidName { field, .. }
            | AlertError::MissingField { field, .. }
            | AlertError::UnexpectedField { field, .. } => Some(field),
            AlertError::ThresholdNotFinite { .. } | AlertError::ThresholdOutOfRange { .. } => {
                Some("threshold")
            }
            AlertError::ForMsOutOfRange { .. } => Some("for_ms"),
            AlertError::WebhookUrlTooLong { .. }
            | AlertError::WebhookUrlUnparsable { .. }
            | AlertError::WebhookScheme { .. }
            | AlertError::WebhookUserinfo
            | AlertError::WebhookNoHost
            | AlertError::WebhookHostNotAllowed { .. } => Some("webhook_url"),
            AlertError::SecretLength { .. } => Some("secret"),
            AlertError::InvalidHostPattern { .. }
            | AlertError::SampleKindMismatch { .. }
            | AlertError::SampleNotFinite { .. }
            | AlertError::SampleOutOfOrder { .. }
            | AlertError::SignatureMalformed { .. }
            | AlertError::SignatureExpired { .. }
            | AlertError::SignatureMismatch => None,
        }
    }
}
