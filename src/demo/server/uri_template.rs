//! RFC 6570 level-1 URI templates (`{name}` expressions), enough to match a
//! concrete URI against a resource template and pull out its variables.

use std::collections::HashMap;

/// A parsed URI template such as `test://template/{id}/data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

impl UriTemplate {
    /// Parses a template. Returns `None` for unbalanced braces, empty or
    /// operator-prefixed expressions (levels 2-4 are not supported), or two
    /// variables with no literal between them (ambiguous to match).
    pub fn parse(text: &str) -> Option<UriTemplate> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}')?;
                    let name = &rest[1..end];
                    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    if !valid || matches!(parts.last(), Some(Part::Var(_))) {
                        return None;
                    }
                    parts.push(Part::Var(name.to_owned()));
                    rest = &rest[end + 1..];
                }
                Some(i) => {
                    let literal = &rest[..i];
                    if literal.contains('}') {
                        return None;
                    }
                    parts.push(Part::Literal(literal.to_owned()));
                    rest = &rest[i..];
                }
                None => {
                    if rest.contains('}') {
                        return None;
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Some(UriTemplate { text: text.to_owned(), parts })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Matches `uri`, returning each variable's value. A variable matches one
    /// or more characters other than `/`, `?` and `#`, so it stays within one
    /// path segment.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Part::Var(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains(['/', '?', '#']) {
                        return None;
                    }
                    vars.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_single_and_multiple_variables() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/1/datax").is_none());

        let t = UriTemplate::parse("demo://projects/{key}").unwrap();
        assert_eq!(t.matches("demo://projects/ATLAS").unwrap()["key"], "ATLAS");
        assert!(t.matches("demo://projects/").is_none());
        assert!(t.matches("demo://projects/A/B").is_none());

        let t = UriTemplate::parse("x://{a}-{b}").unwrap();
        let m = t.matches("x://one-two").unwrap();
        assert_eq!((m["a"].as_str(), m["b"].as_str()), ("one", "two"));
        assert_eq!(t.variables().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn rejects_unsupported_templates() {
        for bad in ["x://{", "x://}", "x://{}", "x://{+path}", "x://{a}{b}", "x://{a b}"] {
            assert!(UriTemplate::parse(bad).is_none(), "{bad}");
        }
    }
}
