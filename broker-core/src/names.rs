//! Names of topics and subscriptions: `[A-Za-z0-9._-]{1,200}`, not starting with `__`.
//! Names starting with `__` belong to the server ([`is_internal`]): no request can create
//! one, so the server's own topics (the synthetic probe's, [`INTERNAL_PREFIX`]) cannot be
//! taken, named or reached by a user.

use crate::error::BrokerError;
use crate::limits::MAX_NAME_LEN;

/// Prefix of the server's own topic names: `__` (refused to users) and the product's name,
/// so a later internal use of `__` cannot collide with them.
pub const INTERNAL_PREFIX: &str = "__wharf.";

/// Whether `name` is one only the server can create (it starts with `__`): such topics are
/// left out of listings and refused to requests.
pub fn is_internal(name: &str) -> bool {
    name.starts_with("__")
}

/// Checks the name of one of the server's own topics: [`INTERNAL_PREFIX`] followed by at
/// least one more character, the whole without its leading `__` a name [`validate`]
/// accepts, within the same length.
pub fn validate_internal(field: &'static str, name: &str) -> Result<(), BrokerError> {
    if name.len() > MAX_NAME_LEN {
        return Err(BrokerError::invalid(
            field,
            format!("must be 1 to {MAX_NAME_LEN} characters, got {}", name.len()),
        ));
    }
    match name.strip_prefix(INTERNAL_PREFIX) {
        Some("") => Err(BrokerError::invalid(
            field,
            format!("an internal name is more than {INTERNAL_PREFIX:?}"),
        )),
        // The prefix without its `__` is a valid name; the rest must keep it one.
        Some(_) => validate(field, &name[2..]),
        None => Err(BrokerError::invalid(
            field,
            format!("an internal name starts with {INTERNAL_PREFIX:?}"),
        )),
    }
}

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

    #[test]
    fn internal_names_take_the_prefix_and_the_alphabet_and_users_cannot_use_them() {
        assert!(validate_internal("name", "__wharf.probe").is_ok());
        assert!(validate_internal("name", "__wharf.probe.probe.dlq").is_ok());
        assert!(validate("name", "__wharf.probe").is_err());
        assert!(is_internal("__wharf.probe") && !is_internal("_wharf.probe"));
        for bad in [
            "wharf.probe",
            "__other",
            "__wharf.a b",
            "__wharf.",
            &format!("__wharf.{}", "a".repeat(193)),
        ] {
            assert!(
                validate_internal("name", bad).is_err(),
                "{bad:?} was accepted"
            );
        }
    }
}
