//! One setting's text into a typed value: whole numbers, numbers within a range, booleans.

use super::error::{ConfigError, invalid};

/// A whole number, or an error naming the setting and the text.
pub(super) fn parse_number<T: std::str::FromStr>(
    setting: &'static str,
    text: &str,
) -> Result<T, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(setting, text, "expected a non-negative whole number"))
}

/// A number setting within `range`, or its default.
pub(super) fn ranged<T>(
    setting: &'static str,
    text: Option<String>,
    default: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, ConfigError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let value = match text {
        Some(text) => parse_number::<T>(setting, &text)?,
        None => default,
    };
    if !range.contains(&value) {
        return Err(invalid(
            setting,
            &value.to_string(),
            format!("must be {} to {}", range.start(), range.end()),
        ));
    }
    Ok(value)
}

/// A boolean setting (`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`), or its default.
pub(super) fn boolean(
    setting: &'static str,
    text: Option<String>,
    default: bool,
) -> Result<bool, ConfigError> {
    match text.as_deref().map(str::trim) {
        None => Ok(default),
        Some("true" | "1" | "yes" | "on") => Ok(true),
        Some("false" | "0" | "no" | "off") => Ok(false),
        Some(other) => Err(invalid(setting, other, "expected true or false")),
    }
}
