//! Objects only where the document says object. serde's derived structs also read a JSON
//! array of their fields in order (`"rate_limit": [null, null]`), which the document does
//! not allow and a client never means: a body must be an object ([`refuse_array_body`]), and
//! an optional object field is read with [`optional`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use crate::http::problem::ApiError;

/// Refuses a body that is a JSON array: every JSON body of the API is an object.
pub(crate) fn refuse_array_body(body: &[u8]) -> Result<(), ApiError> {
    match body.trim_ascii_start().first() {
        Some(b'[') => Err(ApiError::invalid(
            "Failed to deserialize the JSON body into the target type: the body must be a JSON \
             object, not an array",
        )),
        _ => Ok(()),
    }
}

/// Reads an optional object field: an object, `null` or absent (with `#[serde(default)]`),
/// never an array.
pub(crate) fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_option(OptionalObject(PhantomData))
}

struct OptionalObject<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for OptionalObject<T> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object or null")
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(Object(PhantomData)).map(Some)
    }
}

struct Object<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for Object<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}
