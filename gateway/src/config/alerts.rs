//! [`AlertSettings`]: where alert webhooks may go, the server's signing secret and how often
//! rules are evaluated, validated from their text.

use super::error::{ConfigError, invalid};
use super::values::parse_number;
use crate::governance::alerts::WebhookPolicy;

/// How often the evaluator samples every rule, in ms: once a second, fine enough for
/// `for_ms` of a few seconds and far cheaper than the stats requests a dashboard makes.
pub const DEFAULT_ALERT_TICK_MS: u64 = 1_000;
/// Shortest evaluation tick, in ms (tests use it to keep waits short): below 10 ms the
/// sampling itself would be most of the work.
pub const MIN_ALERT_TICK_MS: u64 = 10;
/// Longest evaluation tick, in ms: a tick must stay well under
/// [`crate::governance::alerts::evaluation::MAX_SAMPLE_GAP_MS`], or every pending rule would restart.
pub const MAX_ALERT_TICK_MS: u64 = 10_000;
/// Shortest server secret, in bytes, as a per-rule one
/// ([`crate::governance::alerts::rule::MIN_SECRET_BYTES`]).
pub(super) const MIN_ALERT_SECRET_BYTES: usize = crate::governance::alerts::rule::MIN_SECRET_BYTES;

/// Alert settings as text, before validation.
#[derive(Debug, Clone, Default)]
pub struct AlertRaw {
    /// Comma-separated host patterns webhooks may target (`hooks.example.com`,
    /// `*.example.com`, `10.0.0.7:8443`); absent or empty: any host.
    pub webhook_hosts: Option<String>,
    /// The server's webhook signing secret (absent: one is made at start).
    pub secret: Option<String>,
    /// See [`AlertSettings::tick_ms`].
    pub tick_ms: Option<String>,
}

/// Validated alert settings.
#[derive(Debug, Clone)]
pub struct AlertSettings {
    policy: WebhookPolicy,
    secret: Option<Vec<u8>>,
    tick_ms: u64,
}

impl Default for AlertSettings {
    /// Any http(s) host, no configured secret, a tick of [`DEFAULT_ALERT_TICK_MS`].
    fn default() -> Self {
        AlertSettings {
            policy: WebhookPolicy::allow_any(),
            secret: None,
            tick_ms: DEFAULT_ALERT_TICK_MS,
        }
    }
}

impl AlertSettings {
    /// Where webhooks may go.
    pub fn policy(&self) -> &WebhookPolicy {
        &self.policy
    }

    /// The configured server secret, if any.
    pub fn secret(&self) -> Option<&[u8]> {
        self.secret.as_deref()
    }

    /// How often rules are evaluated, in ms.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }
}

/// Parses and checks the alert settings.
pub(super) fn freeze_alerts(raw: AlertRaw) -> Result<AlertSettings, ConfigError> {
    let policy = match raw.webhook_hosts.as_deref().map(str::trim) {
        None | Some("") => WebhookPolicy::allow_any(),
        Some(text) => {
            let patterns = text.split(',').map(str::trim).filter(|p| !p.is_empty());
            WebhookPolicy::new(patterns)
                .map_err(|error| invalid("alert_webhook_hosts", text, error.to_string()))?
        }
    };
    let secret = match raw.secret {
        Some(secret) if secret.len() < MIN_ALERT_SECRET_BYTES => {
            return Err(invalid(
                "alert_secret",
                "<hidden>",
                format!("must be at least {MIN_ALERT_SECRET_BYTES} bytes"),
            ));
        }
        other => other.map(String::into_bytes),
    };
    let tick_ms = match raw.tick_ms {
        Some(text) => parse_number::<u64>("alert_tick_ms", &text)?,
        None => DEFAULT_ALERT_TICK_MS,
    };
    if !(MIN_ALERT_TICK_MS..=MAX_ALERT_TICK_MS).contains(&tick_ms) {
        return Err(invalid(
            "alert_tick_ms",
            &tick_ms.to_string(),
            format!("must be {MIN_ALERT_TICK_MS} to {MAX_ALERT_TICK_MS}"),
        ));
    }
    Ok(AlertSettings {
        policy,
        secret,
        tick_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_allow_list_allows_any_host_and_a_bad_pattern_is_refused() {
        let any = freeze_alerts(AlertRaw::default()).expect("defaults");
        assert!(any.policy().check_text("http://anywhere.test/x").is_ok());
        let some = freeze_alerts(AlertRaw {
            webhook_hosts: Some("hooks.example.com, *.corp.test".into()),
            ..AlertRaw::default()
        })
        .expect("valid");
        assert!(some.policy().check_text("https://a.corp.test/").is_ok());
        assert!(some.policy().check_text("https://evil.test/").is_err());
        let bad = freeze_alerts(AlertRaw {
            webhook_hosts: Some("*.10.0.0.1".into()),
            ..AlertRaw::default()
        });
        assert!(bad.is_err());
    }

    #[test]
    fn the_tick_and_the_secret_are_checked_on_both_sides() {
        let tick = |ms: u64| {
            freeze_alerts(AlertRaw {
                tick_ms: Some(ms.to_string()),
                ..AlertRaw::default()
            })
        };
        assert!(tick(MIN_ALERT_TICK_MS - 1).is_err());
        assert!(tick(MIN_ALERT_TICK_MS).is_ok());
        assert!(tick(MAX_ALERT_TICK_MS).is_ok());
        assert!(tick(MAX_ALERT_TICK_MS + 1).is_err());
        let secret = |len: usize| {
            freeze_alerts(AlertRaw {
                secret: Some("s".repeat(len)),
                ..AlertRaw::default()
            })
        };
        let error = secret(MIN_ALERT_SECRET_BYTES - 1).expect_err("short");
        assert!(!error.to_string().contains("sss"), "never echoed: {error}");
        assert!(secret(MIN_ALERT_SECRET_BYTES).is_ok());
    }
}
