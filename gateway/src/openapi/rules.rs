//! Rules of request schemas the derive cannot write, set on the generated document: utoipa
//! 5.5's `min_properties` attribute writes `maxProperties` instead, so a body that must name
//! at least one property gets its `minProperties` here; and the keys of a seek's `offsets`
//! are partition numbers (`propertyNames`, which the derive has no attribute for).

use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi, RefOr};

/// A partition number as a JSON object key: digits, at most 9 of them (a topic has at most
/// 256 partitions; 9 digits always parse as a `u32`).
const PARTITION_KEY: &str = "^[0-9]{1,9}$";

/// Schemas that must have at least one property: a seek names its target.
const NEEDS_ONE_PROPERTY: &[&str] = &["SeekRequest"];

/// Sets the rules on `document`'s component schemas.
pub(crate) fn document_rules(document: &mut OpenApi) {
    let Some(components) = document.components.as_mut() else {
        return;
    };
    for name in NEEDS_ONE_PROPERTY {
        if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(*name) {
            object.min_properties = Some(1);
        }
    }
    if let Some(RefOr::T(Schema::Object(seek))) = components.schemas.get_mut("SeekRequest")
        && let Some(RefOr::T(Schema::Object(offsets))) = seek.properties.get_mut("offsets")
    {
        let key = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(PARTITION_KEY))
            .build();
        offsets.property_names = Some(Box::new(Schema::Object(key)));
    }
}
