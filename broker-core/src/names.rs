//! Names of topics and subscriptions: `[A-Za-z0-9._-]{1,200}`, not starting with `__`.

use crate::error::BrokerError;
use crate::limits::MAX_NAME_LEN;

/// Checks a topic or subscription name; `field` names the request field in the error.
pub fn validate(field: &'static str, name: &str) -> Result<(), BrokerError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(BrokerError::invalid(
            field,
            format!("must be 1 to {MAX_NAME_LEN} characters, got {}", name.len()),
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(BrokerError::invalid(
            field,
            format!("may hold only A-Z a-z 0-9 . _ -, found {bad:?}"),
        ));
    }
    if name.starts_with("__") {
        return Err(BrokerError::invalid(
            field,
            "names starting with '__' are reserved",
        ));
    }
    if name == "." || name == ".." {
        return Err(BrokerError::invalid(field, "'.' and '..' are not names"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet_up_to_200_characters() {
        assert!(validate("name", "orders.eu-west_1").is_ok());
        assert!(validate("name", &"a".repeat(200)).is_ok());
    }

    #[test]
    fn refuses_empty_long_reserved_and_foreign_characters() {
        for bad in [
            "",
            "__internal",
            "a/b",
            "a b",
            "é",
            ".",
            "..",
            &"a".repeat(201),
        ] {
            assert!(validate("name", bad).is_err(), "{bad:?} was accepted");
        }
    }
}
