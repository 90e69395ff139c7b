//! Durations on the command line: `250ms`, `10s`, `5m`, `1h`, `7d`, or bare milliseconds.

/// Parses a duration into milliseconds: a bare number is milliseconds (as every `*_ms` field
/// of the API); `ms`, `s`, `m`, `h` and `d` suffixes scale it.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| {
        format!("{text:?} is not a duration: expected e.g. 250ms, 10s, 5m, 1h, 7d or milliseconds")
    })?;
    let scale = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{text:?}: unknown unit {unit:?} (ms, s, m, h, d)")),
    };
    number
        .checked_mul(scale)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn bare_numbers_are_milliseconds_and_suffixes_scale() {
        assert_eq!(parse_duration_ms("1500"), Ok(1500));
        assert_eq!(parse_duration_ms("250ms"), Ok(250));
        assert_eq!(parse_duration_ms("10s"), Ok(10_000));
        assert_eq!(parse_duration_ms("5m"), Ok(300_000));
        assert_eq!(parse_duration_ms("1h"), Ok(3_600_000));
        assert_eq!(parse_duration_ms("7d"), Ok(604_800_000));
    }

    #[test]
    fn other_text_is_refused() {
        assert!(parse_duration_ms("").is_err());
        assert!(parse_duration_ms("s").is_err());
        assert!(parse_duration_ms("10 years").is_err());
        assert!(parse_duration_ms("1.5s").is_err());
        assert!(parse_duration_ms("99999999999999999999d").is_err());
    }
}
