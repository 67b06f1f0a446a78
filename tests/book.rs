//! The book under `docs/src` cannot drift from the binary: the parts of it
//! that restate the code are generated, and this test regenerates them.
//!
//! A page marks a generated part with `<!-- generated: WHAT -->` …
//! `<!-- end generated -->`, where WHAT is
//! - `keys DEFINITION`: the description and the table of keys of one table
//!   of the configuration, from the JSON Schema (`toolgate config-schema`),
//!   that is from the config types and their `///` docs;
//! - `sections`: the index of the configuration's sections;
//! - `defaults`: a hand-written table whose second column names config keys
//!   (`server.max_body_bytes`, `upstream[].timeout`); their defaults fill the
//!   third column;
//! - `help` or `help COMMAND`: `toolgate [COMMAND] --help`;
//! - `layout`: every workspace member (`Cargo.toml`'s `[workspace]
//!   members`), its library and binaries, and the top-level modules they
//!   declare, each with the first sentence of its `//!` doc;
//! - `layout FILE`: the modules `FILE` declares (`src/gateway.rs`), likewise.
//!
//! A stale part is rewritten before the test fails, so running the test
//! (`cargo test --test book`) and committing the result is how the book is
//! updated. A new table in the configuration needs a `keys` part on some
//! page, and a new section a page of its own: the test creates a stub and
//! says what to add to `SUMMARY.md`. A new crate or top-level module
//! changes the `layout` part, and fails the test until the architecture
//! chapter's prose places it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;

const BEGIN: &str = "<!-- generated: ";
const END: &str = "<!-- end generated -->";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn book() -> PathBuf {
    repo().join("docs/src")
}

fn schema() -> Value {
    serde_json::from_str(&toolgate::config::schema_json()).expect("the generated schema is JSON")
}

/// Every Markdown file under `dir`, sorted.
fn pages(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let path = entry?.path();
        if path.is_dir() {
            out.extend(pages(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// The schema a property or `$ref` wrapper points at: `(definition name, schema)`.
fn target<'a>(schema: &'a Value, property: &'a Value) -> (Option<&'a str>, &'a Value) {
    let reference = property["$ref"]
        .as_str()
        .or_else(|| property["allOf"].as_array().and_then(|all| all.first()).and_then(|r| r["$ref"].as_str()));
    match reference.and_then(|r| r.strip_prefix("#/definitions/")) {
        Some(name) => (Some(name), &schema["definitions"][name]),
        None => (None, property),
    }
}

/// How a value of `property` is written, for the Type column.
fn type_name(schema: &Value, property: &Value) -> String {
    let (name, resolved) = target(schema, property);
    if name == Some("Duration") {
        return "duration".into();
    }
    if name == Some("Glob") {
        return "glob".into();
    }
    if let Some(options) = resolved["oneOf"].as_array() {
        let values: Vec<String> =
            options.iter().filter_map(|o| o["const"].as_str()).map(|c| format!("`\"{c}\"`")).collect();
        return match values.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "any".into(),
        };
    }
    let scalar = match &resolved["type"] {
        // Numbers and booleans also take a `${VAR}` string: the type is the first.
        Value::Array(types) => types.first().and_then(Value::as_str),
        Value::String(t) => Some(t.as_str()),
        _ => None,
    };
    match scalar {
        Some("array") => format!("array of {}", plural(&type_name(schema, &resolved["items"]))),
        Some("object") => match &resolved["additionalProperties"] {
            Value::Object(_) => format!("table of {}", plural(&type_name(schema, &resolved["additionalProperties"]))),
            _ => "table".into(),
        },
        Some(t) => t.into(),
        None => "any".into(),
    }
}

fn plural(name: &str) -> String {
    match name {
        "table" => "tables".into(),
        "any" => "values".into(),
        // `table of strings` → `tables of strings`.
        other if other.starts_with("table of ") => format!("tables{}", &other["table".len()..]),
        other => format!("{other}s"),
    }
}

/// A JSON default as TOML.
fn toml_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) if map.is_empty() => "{}".into(),
        Value::Object(map) => {
            let pairs: Vec<String> = map.iter().map(|(k, v)| format!("{k} = {}", toml_value(v))).collect();
            format!("{{ {} }}", pairs.join(", "))
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The Default column: `required`, the TOML default, or `—` (unset).
fn default_cell(key: &str, property: &Value, required: bool) -> String {
    if required {
        return "required".into();
    }
    match property.get("default") {
        Some(value) => {
            let mut cell = format!("`{}`", toml_value(value));
            if let Some(n) = value.as_u64().filter(|_| key.ends_with("_bytes"))
                && n > 0
            {
                if n % (1 << 20) == 0 {
                    cell.push_str(&format!(" ({} MiB)", n >> 20));
                } else if n % (1 << 10) == 0 {
                    cell.push_str(&format!(" ({} KiB)", n >> 10));
                }
            }
            cell
        }
        None => "—".into(),
    }
}

/// A description as one table cell.
fn cell(text: &str) -> String {
    text.trim().replace('|', "\\|").replace("\n\n", "<br><br>").replace('\n', " ")
}

/// The `keys DEFINITION` part: the table's description, then its keys.
fn keys(schema: &Value, definition: &str) -> anyhow::Result<String> {
    let def = &schema["definitions"][definition];
    let properties = def["properties"].as_object().with_context(|| format!("no table `{definition}` in the schema"))?;
    let required: BTreeSet<&str> = def["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = String::new();
    if let Some(description) = def["description"].as_str() {
        out.push_str(description.trim());
        out.push_str("\n\n");
    }
    out.push_str("| Key | Type | Default | Description |\n|---|---|---|---|\n");
    for (key, property) in properties {
        out.push_str(&format!(
            "| `{key}` | {} | {} | {} |\n",
            type_name(schema, property),
            default_cell(key, property, required.contains(key.as_str())),
            cell(property["description"].as_str().unwrap_or_default()),
        ));
    }
    Ok(out)
}

/// A top-level section as written in TOML: `[server]`, `[[upstream]]`.
fn section_header(schema: &Value, name: &str) -> String {
    if schema["properties"][name]["type"] == "array" { format!("[[{name}]]") } else { format!("[{name}]") }
}

/// The table definition behind a top-level section.
fn section_definition<'a>(schema: &'a Value, name: &str) -> Option<&'a str> {
    let property = &schema["properties"][name];
    let inner = if property["type"] == "array" { &property["items"] } else { property };
    target(schema, inner).0
}

/// The `sections` part: one row per top-level section, linking its page.
fn sections(schema: &Value) -> String {
    let mut out = String::from("| Section | What it configures |\n|---|---|\n");
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        out.push_str(&format!(
            "| [`{}`](configuration/{name}.md) | {} |\n",
            section_header(schema, name),
            cell(property["description"].as_str().unwrap_or_default())
        ));
    }
    out
}

/// The default of a key path such as `server.max_body_bytes` or
/// `upstream[].timeout`.
fn default_of(schema: &Value, path: &str) -> Option<String> {
    let (section, key) = path.split_once('.')?;
    let section = section.trim_end_matches("[]");
    let def = &schema["definitions"][section_definition(schema, section)?];
    let property = def["properties"].get(key)?;
    Some(default_cell(key, property, false))
}

/// The `defaults` part: the same table, with the Default column of every
/// row whose Key column names config keys taken from the schema.
fn defaults(schema: &Value, table: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    for line in table.lines() {
        let cells: Vec<&str> = line.split('|').collect();
        // `| a | b | c | d |` splits into 6 pieces; the key is the 2nd cell.
        let keys: Vec<&str> = cells
            .get(2)
            .map(|k| k.split('`').skip(1).step_by(2).filter(|k| k.contains('.')).collect())
            .unwrap_or_default();
        if keys.is_empty() || cells.len() < 5 {
            out.push_str(line);
        } else {
            let values: Option<Vec<String>> = keys.iter().map(|k| default_of(schema, k)).collect();
            let values = values.with_context(|| format!("a key of `{line}` is not in the schema"))?;
            let mut cells = cells.clone();
            let joined = format!(" {} ", values.join(" / "));
            cells[3] = &joined;
            out.push_str(&cells.join("|"));
        }
        out.push('\n');
    }
    Ok(out)
}

/// `toolgate [COMMAND] --help`, as a text block.
fn help(command: Option<&str>) -> anyhow::Result<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolgate"));
    cmd.args(command).arg("--help").env_remove("TOOLGATE_CONFIG").env_remove("TOOLGATE_LOG_FORMAT");
    let out = cmd.output().context("running toolgate --help")?;
    ensure!(out.status.success(), "toolgate {command:?} --help failed: {}", String::from_utf8_lossy(&out.stderr));
    Ok(format!("```text\n{}\n```\n", String::from_utf8(out.stdout)?.trim_end()))
}

/// The first sentence of a Rust file's `//!` doc, as one table cell: the
/// doc's first paragraph (up to a blank line, a list or a code block), cut
/// after its first full stop, with intra-doc links reduced to their text.
fn summary(file: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
    let mut paragraph = Vec::new();
    for line in text.lines() {
        let Some(doc) = line.strip_prefix("//!") else { break };
        let doc = doc.trim();
        if doc.is_empty() || doc.starts_with("- ") || doc.starts_with("* ") || doc.starts_with("```") {
            break;
        }
        paragraph.push(doc);
    }
    let shown = file.strip_prefix(repo()).unwrap_or(file).display();
    ensure!(!paragraph.is_empty(), "{shown} does not open with a `//!` doc saying what it is");
    // Odd pieces between backticks are code, left alone; in the prose
    // between them, `[text](target)` and `[text]` become `text`.
    let mut plain = String::new();
    for (i, piece) in paragraph.join(" ").split('`').enumerate() {
        if i > 0 {
            plain.push('`');
        }
        if i % 2 == 1 {
            plain.push_str(piece);
            continue;
        }
        let mut rest = piece;
        while let Some(at) = rest.find("](") {
            plain.push_str(&rest[..at]);
            rest = rest[at..].find(')').map_or("", |close| &rest[at + close + 1..]);
        }
        plain.push_str(rest);
    }
    let mut plain: String = plain
        .split('`')
        .enumerate()
        .map(|(i, piece)| if i % 2 == 1 { piece.to_owned() } else { piece.replace(['[', ']'], "") })
        .collect::<Vec<_>>()
        .join("`");
    // The first full stop outside code that ends a sentence (not `e.g.`).
    let mut code = false;
    let bytes = plain.as_bytes();
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            b'`' => code = !code,
            b'.' if !code
                && bytes.get(at + 1).is_none_or(|next| next.is_ascii_whitespace())
                && (at < 2 || bytes[at - 2] != b'.') =>
            {
                plain.truncate(at + 1);
                break;
            }
            _ => {}
        }
    }
    if plain.ends_with(':') {
        plain.pop();
        plain.push('.');
    }
    Ok(cell(&plain))
}

/// The modules a Rust file declares (`mod name;`), test-only ones left
/// out: `(name, whether it is public)`.
fn declared(file: &Path) -> anyhow::Result<Vec<(String, bool)>> {
    let text = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
    let mut modules = Vec::new();
    let mut test_only = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with("#[") {
            test_only |= line.contains("cfg(test)");
            continue;
        }
        if line.starts_with("//") {
            continue;
        }
        let (item, public) = match line.strip_prefix("pub") {
            Some(rest) if rest.starts_with(' ') => (rest.trim_start(), true),
            Some(rest) if rest.starts_with('(') => (rest.split_once(')').map_or(rest, |(_, r)| r.trim_start()), false),
            _ => (line, false),
        };
        if let Some(name) = item.strip_prefix("mod ").and_then(|n| n.strip_suffix(';'))
            && !test_only
        {
            modules.push((name.trim().to_owned(), public));
        }
        test_only = false;
    }
    Ok(modules)
}

/// Where module `name`, declared in `parent`, lives (repo-relative, `/`):
/// beside a crate root (`lib.rs`, `main.rs`, a binary's file, `mod.rs`),
/// else in the folder named after the parent.
fn module_file(parent: &str, root: bool, name: &str) -> String {
    let dir = if root {
        parent.rsplit_once('/').map_or(String::new(), |(dir, _)| format!("{dir}/"))
    } else {
        format!("{}/", parent.trim_end_matches(".rs"))
    };
    let file = format!("{dir}{name}.rs");
    if repo().join(&file).exists() { file } else { format!("{dir}{name}/mod.rs") }
}

/// One row of the layout: a crate root, a binary or a module.
struct Room {
    /// The crate's name on its first row.
    krate: Option<String>,
    /// The file, repo-relative.
    file: String,
    /// The binary it is the root of.
    binary: Option<String>,
}

/// Every workspace member (`[workspace] members`), its library and binary
/// roots, and the top-level modules they declare.
fn rooms() -> anyhow::Result<Vec<(String, Vec<Room>)>> {
    let workspace: toml::Table = toml::from_str(&std::fs::read_to_string(repo().join("Cargo.toml"))?)?;
    let members = workspace["workspace"]["members"].as_array().context("no [workspace] members")?;
    let mut out = Vec::new();
    for member in members.iter().filter_map(toml::Value::as_str) {
        let prefix = if member == "." { String::new() } else { format!("{member}/") };
        let manifest: toml::Table = toml::from_str(
            &std::fs::read_to_string(repo().join(&prefix).join("Cargo.toml")).with_context(|| member.to_owned())?,
        )?;
        let name = manifest["package"]["name"].as_str().context("a member without a package name")?.to_owned();
        let mut roots = Vec::new();
        let lib = manifest.get("lib").and_then(|l| l.get("path")).and_then(toml::Value::as_str).unwrap_or("src/lib.rs");
        if repo().join(&prefix).join(lib).exists() {
            roots.push((format!("{prefix}{lib}"), None));
        }
        let bins = manifest.get("bin").and_then(toml::Value::as_array).cloned().unwrap_or_default();
        for bin in &bins {
            let bin_name = bin.get("name").and_then(toml::Value::as_str).unwrap_or(&name);
            let path = bin.get("path").and_then(toml::Value::as_str).unwrap_or("src/main.rs");
            roots.push((format!("{prefix}{path}"), Some(bin_name.to_owned())));
        }
        if bins.is_empty() && repo().join(&prefix).join("src/main.rs").exists() {
            roots.push((format!("{prefix}src/main.rs"), Some(name.clone())));
        }
        let mut rooms: Vec<Room> = Vec::new();
        let mut modules = BTreeSet::new();
        for (file, binary) in roots {
            for (module, _) in declared(&repo().join(&file))? {
                modules.insert(module_file(&file, true, &module));
            }
            rooms.push(Room { krate: rooms.is_empty().then(|| name.clone()), file, binary });
        }
        rooms.extend(modules.into_iter().map(|file| Room { krate: None, file, binary: None }));
        out.push((member.to_owned(), rooms));
    }
    Ok(out)
}

/// The `layout` part: every crate of the workspace, its roots and its
/// top-level modules, each with the first sentence of its `//!` doc.
fn layout() -> anyhow::Result<String> {
    let mut out = String::from("| Crate | File | What it is |\n|---|---|---|\n");
    for (_, rooms) in rooms()? {
        for room in rooms {
            let krate = room.krate.map(|k| format!("`{k}`")).unwrap_or_default();
            let binary = room.binary.map(|b| format!(" (binary `{b}`)")).unwrap_or_default();
            let summary = summary(&repo().join(&room.file))?;
            out.push_str(&format!("| {krate} | `{}`{binary} | {summary} |\n", room.file));
        }
    }
    Ok(out)
}

/// The `layout FILE` part: the modules `FILE` declares, each with the first
/// sentence of its `//!` doc.
fn layout_of(file: &str) -> anyhow::Result<String> {
    let root = ["lib.rs", "main.rs", "mod.rs"].iter().any(|r| file.ends_with(r));
    let mut out = String::from("| File | What it is |\n|---|---|\n");
    let mut files: Vec<String> =
        declared(&repo().join(file))?.iter().map(|(module, _)| module_file(file, root, module)).collect();
    files.sort();
    for module in files {
        out.push_str(&format!("| `{module}` | {} |\n", summary(&repo().join(&module))?));
    }
    Ok(out)
}

/// `text` without its generated parts.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        out.push_str(&rest[..start]);
        rest = rest[start..].find(END).map_or("", |end| &rest[start + end + END.len()..]);
    }
    out.push_str(rest);
    out
}

/// Whether `text` names `path` as a path of its own: not as the tail of a
/// longer one (`src/client.rs` in `crates/mcp/src/client.rs`) nor as the
/// head of a longer name (`crates/mcp` in `crates/mcp-extra`).
fn names(text: &str, path: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || "_-./".contains(c);
    text.match_indices(path).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + path.len()..].chars().next();
        !before.is_some_and(part) && (path.ends_with('/') || !after.is_some_and(|c| part(c) && c != '.' && c != '/'))
    })
}

/// `text` with every generated part regenerated.
fn regenerate(schema: &Value, text: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let close = after.find("-->").context("an unclosed generated marker")?;
        let what = after[..close].trim();
        let body_start = start + BEGIN.len() + close + "-->".len();
        let end = rest[body_start..].find(END).with_context(|| format!("`{what}` has no `{END}`"))? + body_start;
        let old = rest[body_start..end].trim_start_matches('\n');
        let new = match what.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["keys", definition] => keys(schema, definition)?,
            ["sections"] => sections(schema),
            ["defaults"] => defaults(schema, old)?,
            ["help"] => help(None)?,
            ["help", command] => help(Some(command))?,
            ["layout"] => layout()?,
            ["layout", file] => layout_of(file)?,
            _ => bail!("unknown generated part `{what}`"),
        };
        out.push_str(&rest[..body_start]);
        out.push('\n');
        out.push_str(&new);
        rest = &rest[end..];
    }
    out.push_str(rest);
    Ok(out)
}

#[test]
fn the_generated_parts_of_the_book_are_current() -> anyhow::Result<()> {
    let schema = schema();
    let mut stale = Vec::new();
    for page in pages(&book())? {
        let text = std::fs::read_to_string(&page)?;
        let new = regenerate(&schema, &text).with_context(|| page.display().to_string())?;
        if new != text {
            std::fs::write(&page, &new)?;
            stale.push(page.strip_prefix(repo()).unwrap_or(&page).display().to_string());
        }
    }
    ensure!(
        stale.is_empty(),
        "these pages were stale and have been regenerated from the code; review and commit them: {stale:?}"
    );
    Ok(())
}

#[test]
fn every_table_of_the_configuration_has_a_page() -> anyhow::Result<()> {
    let schema = schema();
    let summary = std::fs::read_to_string(book().join("SUMMARY.md"))?;
    let mut documented = BTreeSet::new();
    for page in pages(&book())? {
        let text = std::fs::read_to_string(&page)?;
        for part in text.split(BEGIN).skip(1) {
            if let Some(definition) = part.strip_prefix("keys ").and_then(|p| p.split_whitespace().next()) {
                documented.insert(definition.to_owned());
            }
        }
    }
    let mut problems = Vec::new();
    // Every top-level section has a page of its own, in the summary.
    for name in schema["properties"].as_object().into_iter().flatten().map(|(name, _)| name) {
        let page = book().join(format!("configuration/{name}.md"));
        if !page.exists() {
            let definition = section_definition(&schema, name).unwrap_or("MISSING");
            std::fs::write(
                &page,
                format!("# `{}`\n\n{BEGIN}keys {definition} -->\n{END}\n", section_header(&schema, name)),
            )?;
            documented.insert(definition.to_owned());
            problems.push(format!("created docs/src/configuration/{name}.md for the new section: fill it in"));
        }
        if !summary.contains(&format!("(configuration/{name}.md)")) {
            problems.push(format!(
                "add `  - [`{}`](configuration/{name}.md)` under Configuration in docs/src/SUMMARY.md",
                section_header(&schema, name)
            ));
        }
    }
    // Every table (a definition with keys) is rendered somewhere.
    for (definition, def) in schema["definitions"].as_object().into_iter().flatten() {
        if def["properties"].is_object() && !documented.contains(definition) {
            problems.push(format!(
                "the configuration table `{definition}` is in no page: add `{BEGIN}keys {definition} -->` and \
                 `{END}` to the page of its section"
            ));
        }
    }
    ensure!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

#[test]
fn every_page_is_in_the_summary() -> anyhow::Result<()> {
    let summary = std::fs::read_to_string(book().join("SUMMARY.md"))?;
    let mut missing = Vec::new();
    for page in pages(&book())? {
        let relative = page.strip_prefix(book())?.to_string_lossy().replace('\\', "/");
        if relative != "SUMMARY.md" && !summary.contains(&format!("]({relative})")) {
            missing.push(relative);
        }
    }
    ensure!(missing.is_empty(), "pages missing from docs/src/SUMMARY.md (mdBook would not build them): {missing:?}");
    Ok(())
}

/// Every `{{#include FILE:ANCHOR}}` names a file and an anchor in it (mdBook
/// would include nothing for a missing anchor, without a warning).
#[test]
fn every_include_resolves() -> anyhow::Result<()> {
    let mut problems = Vec::new();
    let mut found = 0;
    for page in pages(&book())? {
        let text = std::fs::read_to_string(&page)?;
        for part in text.split("{{#include ").skip(1) {
            let Some(target) = part.split("}}").next() else { continue };
            found += 1;
            let (file, anchor) = match target.trim().split_once(':') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.trim(), None),
            };
            let path = page.parent().map(|dir| dir.join(file)).unwrap_or_default();
            match std::fs::read_to_string(&path) {
                Err(e) => problems.push(format!("{}: {file}: {e}", page.display())),
                Ok(included) => {
                    if let Some(anchor) = anchor
                        && !(included.contains(&format!("ANCHOR: {anchor}"))
                            && included.contains(&format!("ANCHOR_END: {anchor}")))
                    {
                        problems.push(format!("{}: {file} has no anchor `{anchor}`", page.display()));
                    }
                }
            }
        }
    }
    ensure!(found > 0, "no includes found: is the search broken?");
    ensure!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

/// The ```toml blocks of a Markdown text.
fn toml_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_start().starts_with("```toml") => current = Some(String::new()),
            Some(block) if line.trim_start().starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

#[test]
fn the_toml_examples_follow_the_schema() -> anyhow::Result<()> {
    let validator = jsonschema::validator_for(&schema()).context("the schema compiles")?;
    let mut files = pages(&book())?;
    files.push(repo().join("README.md"));
    let mut checked = 0;
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        for block in toml_blocks(&text) {
            checked += 1;
            let value = match toml::from_str::<toml::Table>(&block) {
                Ok(table) => serde_json::to_value(table)?,
                Err(e) => {
                    problems.push(format!("{}: not TOML: {e}\n{block}", file.display()));
                    continue;
                }
            };
            for error in validator.iter_errors(&value) {
                problems.push(format!("{}: {}: {error}\n{block}", file.display(), error.instance_path()));
            }
        }
    }
    ensure!(checked >= 5, "only {checked} TOML examples found: is the extraction broken?");
    ensure!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

/// A library's crate map is complete: the `//!` doc of each member's
/// `lib.rs` links every public module it declares (`` [`gateway`] ``).
#[test]
fn every_crate_map_links_its_public_modules() -> anyhow::Result<()> {
    let mut missing = Vec::new();
    for (_, rooms) in rooms()? {
        let Some(lib) = rooms.first().filter(|room| room.binary.is_none()) else { continue };
        let text = std::fs::read_to_string(repo().join(&lib.file))?;
        let doc: String = text.lines().map_while(|line| line.strip_prefix("//!")).collect();
        for (module, public) in declared(&repo().join(&lib.file))? {
            if public && !doc.contains(&format!("[`{module}`]")) {
                missing.push(format!("{}: [`{module}`]", lib.file));
            }
        }
    }
    ensure!(
        missing.is_empty(),
        "these crate maps (the `//!` doc of a lib.rs) do not link a public module they declare; add a line for \
         each: {}",
        missing.join(", ")
    );
    Ok(())
}

/// A new crate or module fails the book until the architecture chapter
/// places it in the house: besides the generated `layout` table, the
/// chapter's own prose names every member's folder (`crates/search`) and
/// every binary's and top-level module's file (`src/shared.rs`) or folder
/// (`src/shared/`).
#[test]
fn the_architecture_places_every_crate_and_module() -> anyhow::Result<()> {
    let text = std::fs::read_to_string(book().join("architecture.md"))?;
    ensure!(text.contains(&format!("{BEGIN}layout -->")), "docs/src/architecture.md has no `{BEGIN}layout -->` part");
    let prose = prose(&text);
    let mut unplaced = Vec::new();
    for (member, rooms) in rooms()? {
        if member != "." && !names(&prose, &member) {
            unplaced.push(format!("the crate `{member}`"));
        }
        for room in rooms.iter().filter(|room| room.krate.is_none()) {
            let folder = format!("{}/", room.file.trim_end_matches("/mod.rs").trim_end_matches(".rs"));
            if !names(&prose, &room.file) && !names(&prose, &folder) {
                unplaced.push(format!("`{}`", room.file));
            }
        }
    }
    ensure!(
        unplaced.is_empty(),
        "docs/src/architecture.md does not place these in the house: say, outside its generated parts, where each \
         belongs (naming its path): {}",
        unplaced.join(", ")
    );
    Ok(())
}

#[test]
fn the_version_names_the_commit() -> anyhow::Result<()> {
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate")).arg("--version").output()?;
    let version = String::from_utf8(out.stdout)?;
    let want = format!("toolgate {}", env!("CARGO_PKG_VERSION"));
    ensure!(version.starts_with(&want), "`{version}` does not start with `{want}`");
    // Built in a git checkout (as here and in CI), the commit is named.
    let head = Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(repo()).output();
    if let Ok(head) = head
        && head.status.success()
        && std::env::var_os("TOOLGATE_BUILD_COMMIT").is_none()
    {
        let head = String::from_utf8(head.stdout)?;
        ensure!(
            version.trim() == format!("{want} (commit {})", head.trim()),
            "`{}` does not name HEAD ({})",
            version.trim(),
            head.trim()
        );
    }
    Ok(())
}
