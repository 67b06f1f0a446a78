//! Configuration: the typed model, loading (TOML file, then `TOOLGATE_*`
//! environment overrides, then `${VAR}` expansion) and validation.

mod expand;
mod load;
mod model;
mod validate;

pub use load::{ConfigError, load, load_str};
pub use model::*;
pub use validate::Problem;
