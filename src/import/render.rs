//! Writing the imported configuration as commented TOML. Strings and keys
//! are quoted by the `toml` crate; the layout (comments, inline tables for
//! short maps, one argument per line for long lists) is done here.

use std::fmt::Write as _;

use super::refs::Text;
use super::server::{Kind, Upstream};
use super::source::Source;
use super::vars::Registry;

/// Longest line before a list or table is spread over several lines.
const MAX_LINE: usize = 100;

pub fn document(label: &str, source: &Source, upstreams: &[Upstream], skipped: &[String], vars: &Registry) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# toolgate configuration imported by `toolgate import` from {label},");
    let _ = writeln!(out, "# {}.", source.format.describe());
    out.push_str(
        "# Review it, then check it with `toolgate check-config --config FILE`.\n\
         #\n\
         # Every server became an [[upstream]] with progressive disclosure (the default\n\
         # mode): tools/list shows short descriptions, and a tool can be called once\n\
         # its full description was fetched. With more than one upstream, tool names\n\
         # get the upstream's name as a prefix (`github__create_issue`). Stdio servers\n\
         # get only their `env` plus HOME, PATH, locale and npm/uv settings from\n\
         # toolgate's environment (`inherit_env = true` passes all of it). [server]\n\
         # keeps its defaults (http://127.0.0.1:8080/mcp); config/example.toml shows\n\
         # every option.\n",
    );
    variables(&mut out, vars);
    let renamed: Vec<_> = upstreams.iter().filter(|u| u.name != u.key).collect();
    if !renamed.is_empty() {
        out.push_str(
            "#\n# Upstream names follow toolgate's rule (lowercase letters, digits, `_` and `-`;\n# unique):\n",
        );
        for u in renamed {
            let _ = writeln!(out, "#   {:?} is now {:?}", u.key, u.name);
        }
    }
    if !skipped.is_empty() {
        out.push_str("#\n# Left out:\n");
        for s in skipped {
            let _ = writeln!(out, "#   {s}");
        }
    }
    for u in upstreams {
        out.push('\n');
        upstream(&mut out, u);
    }
    out
}

/// The list of variables the file needs, aligned.
fn variables(out: &mut String, vars: &Registry) {
    if vars.is_empty() {
        out.push_str("#\n# It needs no environment variables.\n");
        return;
    }
    out.push_str(
        "#\n# Environment variables it needs, set where toolgate runs (e.g. docker/toolgate.env\n\
         # or a Kubernetes Secret). Secrets found in the source were moved into variables;\n\
         # their values are not in this file.\n",
    );
    let labels: Vec<String> =
        vars.iter().map(|v| if v.optional { format!("{} (optional)", v.name) } else { v.name.clone() }).collect();
    let width = labels.iter().map(String::len).max().unwrap_or(0).min(40);
    for (var, label) in vars.iter().zip(&labels) {
        let _ = writeln!(out, "#   {label:<width$}  {}; used by {}", var.about, var.uses.join(", "));
    }
}

fn upstream(out: &mut String, u: &Upstream) {
    let what = match &u.kind {
        Kind::Stdio { .. } => "stdio",
        Kind::Http { sse: false, .. } => "Streamable HTTP",
        Kind::Http { sse: true, .. } => "legacy HTTP+SSE",
    };
    let _ = writeln!(out, "# {:?} ({what})", u.key);
    if let Some(d) = &u.description {
        for line in d.lines() {
            let _ = writeln!(out, "# {line}");
        }
    }
    for note in &u.notes {
        let _ = writeln!(out, "# Note: {note}");
    }
    out.push_str("[[upstream]]\n");
    let _ = writeln!(out, "name = {}", quote(&u.name));
    let mut tables = Vec::new();
    match &u.kind {
        Kind::Stdio { command, args, env, cwd } => {
            let _ = writeln!(out, "command = {}", text(command));
            if !args.is_empty() {
                array(out, "args", args);
            }
            if let Some(cwd) = cwd {
                let _ = writeln!(out, "cwd = {}", text(cwd));
            }
            table(out, &mut tables, "env", env);
        }
        Kind::Http { url, headers, sse } => {
            let _ = writeln!(out, "url = {}", text(url));
            if *sse {
                out.push_str("transport = \"sse\"\n");
            }
            table(out, &mut tables, "headers", headers);
        }
    }
    // Sub-tables come after every plain key of the upstream.
    out.push_str(&tables.concat());
}

fn array(out: &mut String, key: &str, items: &[Text]) {
    let items: Vec<String> = items.iter().map(text).collect();
    let line = format!("{key} = [{}]", items.join(", "));
    if line.len() <= MAX_LINE {
        let _ = writeln!(out, "{line}");
    } else {
        let _ = writeln!(out, "{key} = [");
        for item in items {
            let _ = writeln!(out, "  {item},");
        }
        out.push_str("]\n");
    }
}

/// A map as an inline table when it fits on a line, else as a sub-table
/// (collected in `tables`, written after the upstream's plain keys).
fn table(out: &mut String, tables: &mut Vec<String>, key: &str, entries: &[(String, Text)]) {
    if entries.is_empty() {
        return;
    }
    let pairs: Vec<String> = entries.iter().map(|(k, v)| format!("{} = {}", bare_or_quoted(k), text(v))).collect();
    let line = format!("{key} = {{ {} }}", pairs.join(", "));
    if line.len() <= MAX_LINE {
        let _ = writeln!(out, "{line}");
    } else {
        tables.push(format!("[upstream.{key}]\n{}\n", pairs.join("\n")));
    }
}

fn text(t: &Text) -> String {
    quote(&t.render())
}

fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

fn bare_or_quoted(key: &str) -> String {
    let bare = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if bare { key.to_owned() } else { quote(key) }
}
