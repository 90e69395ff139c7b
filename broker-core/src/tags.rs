//! Message tags and subscription filters on them: [`validate`] checks a list of tags against
//! [`MAX_TAGS`] and the rule of one tag ([`valid_tag`]), and words the one refusal both a
//! produce and a subscription's filter give.

use crate::error::BrokerError;
use crate::limits::{MAX_TAG_LEN, MAX_TAGS};

/// Whether a tag is 1 to [`MAX_TAG_LEN`] characters of `A-Z a-z 0-9 . _ - : /`.
pub fn valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':' | '/'))
}

/// Checks `tags`: at most [`MAX_TAGS`], each one [`valid_tag`]; `field` names the request
/// field in the error (`tags`, `filter.tags`).
pub fn validate(field: &'static str, tags: &[String]) -> Result<(), BrokerError> {
    if tags.len() > MAX_TAGS {
        return Err(BrokerError::invalid(
            field,
            format!("at most {MAX_TAGS} tags, got {}", tags.len()),
        ));
    }
    if let Some(bad) = tags.iter().find(|tag| !valid_tag(tag)) {
        return Err(BrokerError::invalid(
            field,
            format!("tag {bad:?} is not 1 to {MAX_TAG_LEN} characters of A-Z a-z 0-9 . _ - : /"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn accepts_up_to_the_most_tags_of_the_documented_alphabet() {
        assert!(validate("tags", &[]).is_ok());
        assert!(
            validate(
                "tags",
                &tags(&["eu", "a.b_c-d:e/f", &"t".repeat(MAX_TAG_LEN)])
            )
            .is_ok()
        );
        assert!(validate("tags", &vec!["t".to_owned(); MAX_TAGS]).is_ok());
    }

    #[test]
    fn refuses_one_tag_too_many() {
        let error = validate("tags", &vec!["t".to_owned(); MAX_TAGS + 1]).expect_err("too many");
        assert_eq!(error.to_string(), "invalid tags: at most 32 tags, got 33");
    }

    #[test]
    fn refuses_empty_long_and_foreign_tags_naming_the_field_and_the_tag() {
        for bad in ["", "a b", "é", &"t".repeat(MAX_TAG_LEN + 1)] {
            let error = validate("filter.tags", &tags(&["ok", bad])).expect_err(bad);
            assert_eq!(
                error.to_string(),
                format!(
                    "invalid filter.tags: tag {bad:?} is not 1 to 200 characters of A-Z a-z 0-9 . _ - : /"
                )
            );
        }
    }
}
