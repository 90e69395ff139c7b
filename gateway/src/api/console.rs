//! The web console's wire types: the path of a console file.

use serde::Deserialize;
use utoipa::IntoParams;

/// Path of a console file.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct AssetPath {
    /// The file's name, e.g. `console.js`.
    pub asset: String,
}
