//! RFC 6570 URI templates as MCP resource templates use them: matching a
//! concrete URI against a template to tell whether it is one of its
//! expansions, and capturing the template's variables.
//!
//! The gateway uses it to find the upstream whose template a URI expands;
//! the demo kit to serve `resources/read` for a template and hand the reader
//! its variables. Level 1 expressions (`{id}`) and the reserved form
//! (`{+path}`) are matched and captured; an expression with any other
//! operator (`{#x}`, `{?q,page}`, `{/segments*}`, ...) matches any run of
//! characters and captures nothing.

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
    /// `{name}` (one or more characters other than `/`, `?` and `#`, so it
    /// stays within one path segment) or `{+name}` (one or more of any).
    Var {
        name: String,
        reserved: bool,
    },
    /// An expression with another operator: any run of characters, possibly
    /// none (its variables may all be undefined), not captured.
    Other,
}

impl UriTemplate {
    /// Parses a template. Returns `None` for unbalanced braces, an empty
    /// expression, an invalid variable name, or two expressions with no
    /// literal between them (ambiguous to match).
    pub fn parse(text: &str) -> Option<UriTemplate> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let open = rest.find('{').unwrap_or(rest.len());
            let literal = &rest[..open];
            if literal.contains('}') {
                return None;
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(literal.to_owned()));
            }
            rest = &rest[open..];
            if rest.is_empty() {
                break;
            }
            let close = rest.find('}')?;
            let expression = expression(&rest[1..close])?;
            if matches!(parts.last(), Some(Part::Var { .. } | Part::Other)) {
                return None;
            }
            parts.push(expression);
            rest = &rest[close + 1..];
        }
        Some(UriTemplate { text: text.to_owned(), parts })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The names of the captured variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, .. } => Some(name.as_str()),
            Part::Literal(_) | Part::Other => None,
        })
    }

    /// Whether every expression is captured (level 1 or `{+var}`), so a
    /// match hands back all of the template's variables.
    pub fn captures_all(&self) -> bool {
        !self.parts.contains(&Part::Other)
    }

    /// Matches `uri`, returning each captured variable's value; `None` if
    /// `uri` is not an expansion of the template.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut captured = Vec::new();
        match_parts(&self.parts, uri, &mut captured).then(|| captured.into_iter().collect())
    }

    /// Whether `uri` is an expansion of the template.
    pub fn is_match(&self, uri: &str) -> bool {
        match_parts(&self.parts, uri, &mut Vec::new())
    }
}

/// Parses the inside of `{...}`.
fn expression(inner: &str) -> Option<Part> {
    let (operator, names) = match inner.chars().next()? {
        c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&') => (Some(c), &inner[1..]),
        _ => (None, inner),
    };
    let valid = |name: &str| {
        let name = name.strip_suffix('*').unwrap_or(name);
        let name = name.split_once(':').map_or(name, |(n, len)| if len.parse::<u16>().is_ok() { n } else { "" });
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%'))
    };
    if !names.split(',').all(valid) {
        return None;
    }
    let plain = |name: &str| !name.contains([',', '*', ':']);
    match operator {
        None if plain(names) => Some(Part::Var { name: names.to_owned(), reserved: false }),
        Some('+') if plain(names) => Some(Part::Var { name: names.to_owned(), reserved: true }),
        _ => Some(Part::Other),
    }
}

/// Matches `parts` against the whole of `uri`, trying each place the next
/// literal occurs after a variable (backtracking), so `x://{a}-{b}` splits
/// `x://a-b-c` as `a` and `b-c`.
fn match_parts(parts: &[Part], uri: &str, captured: &mut Vec<(String, String)>) -> bool {
    let Some((part, rest)) = parts.split_first() else { return uri.is_empty() };
    let (name, reach, min) = match part {
        Part::Literal(literal) => {
            return uri.strip_prefix(literal.as_str()).is_some_and(|u| match_parts(rest, u, captured));
        }
        Part::Var { name, reserved: false } => (Some(name), uri.find(['/', '?', '#']).unwrap_or(uri.len()), 1),
        Part::Var { name, reserved: true } => (Some(name), uri.len(), 1),
        Part::Other => (None, uri.len(), 0),
    };
    // Where the expression may end: where the literal after it starts, or
    // at the end of the URI when it is last (the parser never puts two
    // expressions side by side).
    let ends: Vec<usize> = match rest.first() {
        Some(Part::Literal(next)) => {
            (min..=reach).filter(|&i| uri.is_char_boundary(i) && uri[i..].starts_with(next.as_str())).collect()
        }
        _ => (reach == uri.len() && uri.len() >= min).then_some(uri.len()).into_iter().collect(),
    };
    for end in ends {
        if let Some(name) = name {
            captured.push((name.clone(), uri[..end].to_owned()));
        }
        if match_parts(rest, &uri[end..], captured) {
            return true;
        }
        if name.is_some() {
            captured.pop();
        }
    }
    false
}

#[cfg(test)]
mod tests;
