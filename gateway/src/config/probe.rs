//! The synthetic probe's setting: `probe_interval_ms`, the time between two rounds (see
//! [`crate::governance::probe`]), 0 to turn probes off.

use super::error::{ConfigError, invalid};
use super::values::parse_number;

/// Default time between two probe rounds, in ms: 10 s finds a node that stopped taking or
/// delivering messages within seconds, at the cost of one tiny message per round.
pub const DEFAULT_PROBE_INTERVAL_MS: u64 = 10_000;
/// Shortest time between two rounds, in ms (0 aside): tests use it to see rounds quickly;
/// below 100 ms the probe's own messages would be a load.
pub const MIN_PROBE_INTERVAL_MS: u64 = 100;
/// Longest time between two rounds, in ms: 10 minutes; a probe rarer than that reports a
/// failure after the clients have.
pub const MAX_PROBE_INTERVAL_MS: u64 = 600_000;

/// `probe_interval_ms` from its text: 0 (off) or [`MIN_PROBE_INTERVAL_MS`] to
/// [`MAX_PROBE_INTERVAL_MS`], [`DEFAULT_PROBE_INTERVAL_MS`] when absent.
pub(super) fn freeze_probe_interval(text: Option<String>) -> Result<u64, ConfigError> {
    let interval_ms = match text {
        Some(text) => parse_number::<u64>("probe_interval_ms", &text)?,
        None => DEFAULT_PROBE_INTERVAL_MS,
    };
    if interval_ms != 0 && !(MIN_PROBE_INTERVAL_MS..=MAX_PROBE_INTERVAL_MS).contains(&interval_ms) {
        return Err(invalid(
            "probe_interval_ms",
            &interval_ms.to_string(),
            format!("must be 0 (off) or {MIN_PROBE_INTERVAL_MS} to {MAX_PROBE_INTERVAL_MS}"),
        ));
    }
    Ok(interval_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_off_or_within_its_bounds_and_defaults_to_ten_seconds() {
        let interval = |text: &str| freeze_probe_interval(Some(text.to_owned()));
        assert_eq!(freeze_probe_interval(None).expect("default"), 10_000);
        assert_eq!(interval("0").expect("off"), 0);
        assert!(interval(&(MIN_PROBE_INTERVAL_MS - 1).to_string()).is_err());
        assert!(interval(&MIN_PROBE_INTERVAL_MS.to_string()).is_ok());
        assert!(interval(&MAX_PROBE_INTERVAL_MS.to_string()).is_ok());
        assert!(interval(&(MAX_PROBE_INTERVAL_MS + 1).to_string()).is_err());
        let error = interval("soon").expect_err("not a number");
        assert!(error.to_string().contains("probe_interval_ms"), "{error}");
    }
}
