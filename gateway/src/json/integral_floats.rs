//! JSON numbers written as floats with a zero fraction (`39916799.0`, `1e3`) read as the
//! integers they are. JSON Schema, and so the OpenAPI document, counts them as integers;
//! serde does not. Used only after a typed parse failed, so a body without them pays nothing.

use serde_json::Value;

/// 2^64 as an `f64`: the first float past `u64::MAX` (which rounds up to it).
const TWO_TO_THE_64: f64 = 18_446_744_073_709_551_616.0;

/// `body` re-encoded with every integral float that fits an `i64` or a `u64` written as an
/// integer; `None` when `body` is not JSON or holds no such float (nothing to retry).
pub(crate) fn rewrite(body: &[u8]) -> Option<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    if !integers_of_integral_floats(&mut value) {
        return None;
    }
    serde_json::to_vec(&value).ok()
}

/// Rewrites the integral floats within `value`; whether any was.
fn integers_of_integral_floats(value: &mut Value) -> bool {
    match value {
        Value::Number(number) => match number.as_f64().filter(|_| number.is_f64()) {
            Some(float) => match integer(float) {
                Some(integer) => {
                    *value = integer;
                    true
                }
                None => false,
            },
            None => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
            integers_of_integral_floats(item) | changed
        }),
        Value::Object(members) => members.values_mut().fold(false, |changed, item| {
            integers_of_integral_floats(item) | changed
        }),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// The integer `float` is, when it has no fraction and fits an `i64` or a `u64`.
fn integer(float: f64) -> Option<Value> {
    if !float.is_finite() || float.fract() != 0.0 {
        return None;
    }
    if (0.0..TWO_TO_THE_64).contains(&float) {
        // In range and integral: the cast is exact.
        Some(Value::from(float as u64))
    } else if (i64::MIN as f64..0.0).contains(&float) {
        Some(Value::from(float as i64))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(body: &str) -> Option<String> {
        rewrite(body.as_bytes()).map(|bytes| String::from_utf8(bytes).expect("utf-8"))
    }

    #[test]
    fn integral_floats_become_integers_anywhere_in_the_body() {
        assert_eq!(
            rewritten(r#"{"a": 39916799.0, "b": [1e3, -2.0], "c": {"d": 0.0}}"#).as_deref(),
            Some(r#"{"a":39916799,"b":[1000,-2],"c":{"d":0}}"#)
        );
    }

    #[test]
    fn bodies_without_integral_floats_are_left_alone() {
        assert_eq!(rewritten(r#"{"a": 1, "b": "2.0"}"#), None);
        assert_eq!(rewritten(r#"{"a": 1.5}"#), None);
        assert_eq!(rewritten(r#"{"a": 1e30}"#), None);
        assert_eq!(rewritten("not json"), None);
    }
}
