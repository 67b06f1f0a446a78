//! TOML key paths for messages: `upstream[2].headers.Authorization`.
//!
//! Every problem and parse error names the key it is about in the form a user
//! would look for in their file, so this is shared by loading, expansion and
//! validation.

use std::fmt;

/// One step in a path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A path from the root of the configuration to one value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TomlPath(Vec<Segment>);

impl TomlPath {
    /// The empty path (the whole document).
    pub(crate) fn root() -> Self {
        Self(Vec::new())
    }

    /// This path extended by a table key.
    pub(crate) fn key(&self, key: &str) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Key(key.to_owned()));
        next
    }

    /// This path extended by an array index.
    pub(crate) fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(Segment::Index(index));
        next
    }

    /// Adds a segment in place (for recursive walks).
    pub(crate) fn push(&mut self, segment: Segment) {
        self.0.push(segment);
    }

    /// Removes the last segment (for recursive walks).
    pub(crate) fn pop(&mut self) {
        self.0.pop();
    }

    /// The segments, root first.
    pub(crate) fn segments(&self) -> &[Segment] {
        &self.0
    }
}

/// A key can be written bare in TOML when it only uses these characters.
fn is_bare_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl fmt::Display for TomlPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Index(n) => write!(f, "[{n}]")?,
                Segment::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if is_bare_key(k) {
                        f.write_str(k)?;
                    } else {
                        // TOML basic-string quoting, so the path can be pasted back.
                        f.write_str("\"")?;
                        for c in k.chars() {
                            match c {
                                '"' => f.write_str("\\\"")?,
                                '\\' => f.write_str("\\\\")?,
                                c if c.is_control() => write!(f, "\\u{:04X}", u32::from(c))?,
                                c => write!(f, "{c}")?,
                            }
                        }
                        f.write_str("\"")?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
