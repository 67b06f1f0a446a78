//! The environment variables an imported configuration refers to: the ones
//! the source already referred to (VS Code inputs, `${env:NAME}`, `${NAME}`)
//! and the ones made for secrets taken out of it, with unique names.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;

/// One variable the imported configuration needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Its name, as written in `${NAME}`.
    pub name: String,
    /// What it is, for the comment that lists it (e.g. `VS Code input
    /// "GitHub token"`, `a literal value in the source`).
    pub about: String,
    /// Where the configuration uses it, e.g. `github: env GITHUB_TOKEN`.
    pub uses: Vec<String>,
    /// Only ever used as `${NAME:-default}`: the file loads without it.
    pub optional: bool,
    /// For a secret taken out of the source: the value it had there.
    pub secret: Option<String>,
}

/// The variables of one import, in order of first use.
#[derive(Debug, Default)]
pub struct Registry {
    vars: IndexMap<String, Variable>,
    /// Names the source refers to, with the servers whose entries refer to
    /// them: a secret of another server never takes one, even before the
    /// reference itself is converted.
    reserved: HashMap<String, HashSet<String>>,
}

impl Registry {
    /// Keeps the secrets of servers other than `server` off `name`. A
    /// server may refer to its own env variable (`mcp-remote` reads
    /// `--header "Authorization:${AUTH_HEADER}"` from its environment): the
    /// secret from that variable then keeps the name, so one variable fills
    /// both.
    pub fn reserve(&mut self, name: String, server: &str) {
        self.reserved.entry(name).or_default().insert(server.to_owned());
    }

    /// A reference the source made to variable `name` (its name cannot
    /// change: the user's environment already has it).
    pub fn reference(&mut self, name: &str, optional: bool, about: &str, used: &str) {
        let var = self.vars.entry(name.to_owned()).or_insert_with(|| Variable {
            name: name.to_owned(),
            about: about.to_owned(),
            uses: Vec::new(),
            optional,
            secret: None,
        });
        var.optional &= optional;
        push_use(&mut var.uses, used);
    }

    /// A secret of `server` taken out of the source: the first of
    /// `candidates` that is free or already holds the same value, else the
    /// last with a numeric suffix. Returns the name chosen.
    pub fn secret(&mut self, candidates: &[String], value: &str, server: &str, used: &str) -> String {
        let free = |name: &str| {
            self.reserved.get(name).is_none_or(|by| by.iter().all(|s| s == server))
                && self.vars.get(name).is_none_or(|v| v.secret.as_deref().is_none_or(|s| s == value))
        };
        let base = candidates.last().cloned().unwrap_or_else(|| "SECRET".into());
        let name = candidates
            .iter()
            .find(|c| free(c))
            .cloned()
            .or_else(|| (2..1000).map(|n| format!("{base}_{n}")).find(|c| free(c)))
            .unwrap_or(base);
        let var = self.vars.entry(name.clone()).or_insert_with(|| Variable {
            name: name.clone(),
            about: String::new(),
            uses: Vec::new(),
            optional: false,
            secret: None,
        });
        var.about = "a literal value in the source".into();
        var.optional = false;
        var.secret = Some(value.to_owned());
        push_use(&mut var.uses, used);
        name
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Variable> {
        self.vars.values()
    }

    pub fn into_list(self) -> Vec<Variable> {
        self.vars.into_values().collect()
    }
}

fn push_use(uses: &mut Vec<String>, used: &str) {
    if !uses.iter().any(|u| u == used) {
        uses.push(used.to_owned());
    }
}

/// A variable name made from free text: `perplexity-key` -> `PERPLEXITY_KEY`,
/// `X-API-Key` -> `X_API_KEY`. Never empty, never starts with a digit.
pub fn env_name(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches('_');
    match trimmed.chars().next() {
        None => "SECRET".into(),
        Some(c) if c.is_ascii_digit() => format!("_{trimmed}"),
        Some(_) => trimmed.to_owned(),
    }
}
