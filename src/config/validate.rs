//! Validation: every problem, with its TOML path.

use std::fmt;

/// One problem in the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// TOML path, e.g. `upstream[1].name`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
