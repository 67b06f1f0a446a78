//! Converting one server entry of the source into an upstream.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::refs::{Ctx, Text, is_var_name, translate};
use super::secrets::{is_secret_name, looks_like_token, split_scheme, url_secrets};
use super::source::Source;
use super::vars::{Registry, env_name};

/// An imported upstream, ready to render.
#[derive(Debug)]
pub struct Upstream {
    /// Its toolgate name.
    pub name: String,
    /// Its key in the source.
    pub key: String,
    /// The source's `description`, if any.
    pub description: Option<String>,
    pub kind: Kind,
    /// What the reader should know: what was changed, what was left out.
    pub notes: Vec<String>,
}

#[derive(Debug)]
pub enum Kind {
    Stdio { command: Text, args: Vec<Text>, env: Vec<(String, Text)>, cwd: Option<Text> },
    Http { url: Text, headers: Vec<(String, Text)>, sse: bool },
}

/// The upstream names given so far.
#[derive(Debug, Default)]
pub struct Names(HashSet<String>);

impl Names {
    /// A unique name following toolgate's rule, made from a source key:
    /// lowercase, runs of anything outside `[a-z0-9_-]` become one `-`, and a
    /// `-2`, `-3`… suffix when the name is taken.
    pub fn claim(&mut self, key: &str) -> String {
        let mut base = String::new();
        for c in key.chars().flat_map(char::to_lowercase) {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
                base.push(c);
            } else if !base.ends_with('-') {
                base.push('-');
            }
        }
        let base = base.trim_matches('-');
        let base = if base.is_empty() { "server" } else { base };
        let name =
            std::iter::once(base.to_owned()).chain((2..).map(|n| format!("{base}-{n}"))).find(|n| !self.0.contains(n));
        let name = name.unwrap_or_else(|| base.to_owned());
        self.0.insert(name.clone());
        name
    }
}

/// Keys with a meaning toolgate does not have, and what to tell the reader.
const UNSUPPORTED: [(&str, &str); 12] = [
    (
        "envFile",
        "toolgate does not read env files: put its variables into toolgate's environment and list them in `env`",
    ),
    ("timeout", "the client's timeout (in its own unit) is not carried over: set `timeout` (e.g. \"60s\") if needed"),
    ("autoApprove", "tool approval is the client's business; not carried over"),
    ("alwaysAllow", "tool approval is the client's business; not carried over"),
    ("trust", "tool approval is the client's business; not carried over"),
    ("includeTools", "tool filtering is not carried over"),
    ("excludeTools", "tool filtering is not carried over"),
    ("oauth", "OAuth sign-in is not supported for upstreams: use a token in `headers`"),
    ("auth", "OAuth sign-in is not supported for upstreams: use a token in `headers`"),
    ("headersHelper", "a headers helper command is not supported: put the headers it produces into `headers`"),
    ("sandboxEnabled", "the client's sandbox is not carried over"),
    ("sandbox", "the client's sandbox is not carried over"),
];

/// Keys read by the conversion itself.
const HANDLED: [&str; 12] = [
    "type",
    "transport",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "serverUrl",
    "httpUrl",
    "headers",
    "disabled",
    "description",
];

/// Converts the entry `key` of the source, or says why it is left out.
pub fn convert(
    key: &str,
    entry: &Value,
    source: &Source,
    names: &mut Names,
    vars: &mut Registry,
) -> Result<Upstream, String> {
    let Value::Object(entry) = entry else {
        return Err("not an object".into());
    };
    if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Err("disabled in the source".into());
    }
    let transport = transport(entry)?;
    let name = names.claim(key);
    let mut notes = Vec::new();
    let prefix = env_name(&name);
    let mut ctx = Ctx { inputs: &source.inputs, vars, notes: &mut notes, server: key };
    let kind = match transport {
        Transport::Stdio => stdio(entry, &name, &prefix, &mut ctx)?,
        Transport::Http { url_key, sse } => http(entry, url_key, sse, &name, &prefix, &mut ctx)?,
    };
    for (k, v) in entry {
        if let Some((_, why)) = UNSUPPORTED.iter().find(|(u, _)| u == k) {
            notes.push(format!("`{k}`: {why}"));
        } else if !HANDLED.contains(&k.as_str()) {
            notes.push(format!("`{k}` ({}) is not a toolgate setting; left out", short(v)));
        }
    }
    let description = entry.get("description").and_then(Value::as_str).map(str::to_owned);
    Ok(Upstream { name, key: key.to_owned(), description, kind, notes })
}

enum Transport {
    Stdio,
    Http { url_key: &'static str, sse: bool },
}

/// Which transport the entry uses: its `type` (or `transport`) when given,
/// else `command` or a URL key. A URL ending in `/sse` without a `type` is
/// taken for the legacy HTTP+SSE transport, which by convention lives there;
/// Gemini CLI's `httpUrl` is Streamable HTTP and its `url` is SSE.
fn transport(entry: &Map<String, Value>) -> Result<Transport, String> {
    let url_key = ["url", "serverUrl", "httpUrl"].into_iter().find(|k| entry.get(*k).is_some_and(Value::is_string));
    let has_command = entry.get("command").is_some_and(Value::is_string);
    let declared = ["type", "transport"].iter().find_map(|k| entry.get(*k).and_then(Value::as_str));
    let declared = declared.map(|t| t.to_ascii_lowercase().replace(['-', '_'], ""));
    match (declared.as_deref(), has_command, url_key) {
        (_, true, Some(_)) => Err("has both `command` and a URL".into()),
        (Some("stdio") | None, true, None) => Ok(Transport::Stdio),
        (Some("sse"), false, Some(url_key)) => Ok(Transport::Http { url_key, sse: true }),
        (Some("http" | "streamablehttp" | "streamable"), false, Some(url_key)) => {
            Ok(Transport::Http { url_key, sse: false })
        }
        (None, false, Some(url_key)) => {
            let url = entry.get(url_key).and_then(Value::as_str).unwrap_or_default();
            let sse = url_key != "httpUrl"
                && (url.trim_end_matches('/').ends_with("/sse") || url_key == "url" && is_gemini(entry));
            Ok(Transport::Http { url_key, sse })
        }
        (Some(other), _, _) if !["stdio", "sse", "http", "streamablehttp", "streamable"].contains(&other) => {
            Err(format!("unknown `type` {other:?}"))
        }
        (Some(t), _, _) => Err(format!("`type` {t:?} without the `command` or `url` it needs")),
        (None, false, None) => Err("neither `command` nor `url`".into()),
    }
}

/// Gemini CLI's keys: there `url` means SSE. Only its own keys tell.
fn is_gemini(entry: &Map<String, Value>) -> bool {
    ["trust", "includeTools", "excludeTools"].iter().any(|k| entry.contains_key(*k))
}

fn stdio(entry: &Map<String, Value>, name: &str, prefix: &str, ctx: &mut Ctx<'_>) -> Result<Kind, String> {
    let raw_command = entry.get("command").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut raw_args = strings(entry.get("args"), "args", ctx.notes);
    let mut raw_command = raw_command;
    // Windows configs wrap npx in `cmd /c`; toolgate runs on Linux and macOS.
    if ["cmd", "cmd.exe"].contains(&raw_command.to_ascii_lowercase().as_str())
        && raw_args.first().is_some_and(|a| a.eq_ignore_ascii_case("/c"))
        && raw_args.len() >= 2
    {
        ctx.notes.push(format!("the Windows `{raw_command} /c` wrapper was removed"));
        raw_args.remove(0);
        raw_command = raw_args.remove(0);
    }
    if raw_command.trim().is_empty() {
        return Err("`command` is empty".into());
    }
    if raw_command.contains(' ') && raw_args.is_empty() {
        ctx.notes.push(
            "`command` contains spaces: toolgate runs it as one program name, not through a shell; \
             split it into `command` and `args`"
                .into(),
        );
    }
    let command = translate(&raw_command, &format!("{name}: command"), ctx);
    let args = secret_args(raw_args, name, prefix, ctx);
    let mut env = Vec::new();
    for (key, value) in object(entry.get("env"), "env", ctx.notes) {
        let used = format!("{name}: env {key}");
        let text = translate(&value, &used, ctx);
        let text = match text.as_literal() {
            Some(literal) if !literal.is_empty() && (is_secret_name(&key) || looks_like_token(literal)) => {
                let own = if is_var_name(&key) { key.clone() } else { env_name(&key) };
                let candidates = [own.clone(), format!("{prefix}_{own}")];
                Text::var(&ctx.vars.secret(&candidates, literal, ctx.server, &used))
            }
            Some(literal) => url_text(literal, prefix, &used, ctx),
            None => text,
        };
        env.push((key, text));
    }
    let cwd = entry.get("cwd").and_then(Value::as_str).map(|c| translate(c, &format!("{name}: cwd"), ctx));
    Ok(Kind::Stdio { command, args, env, cwd })
}

fn http(
    entry: &Map<String, Value>,
    url_key: &str,
    sse: bool,
    name: &str,
    prefix: &str,
    ctx: &mut Ctx<'_>,
) -> Result<Kind, String> {
    let raw_url = entry.get(url_key).and_then(Value::as_str).unwrap_or_default();
    let used = format!("{name}: url");
    let url = translate(raw_url, &used, ctx);
    let url = match url.as_literal() {
        Some(literal) => url_text(literal, prefix, &used, ctx),
        None => url,
    };
    if let Some(literal) = url.as_literal()
        && !(literal.starts_with("http://") || literal.starts_with("https://"))
    {
        return Err(format!("URL {literal:?} is not http:// or https://"));
    }
    let mut headers = Vec::new();
    for (key, value) in object(entry.get("headers"), "headers", ctx.notes) {
        let used = format!("{name}: header {key}");
        let text = translate(&value, &used, ctx);
        let text = match text.as_literal() {
            Some(literal) => header_text(&key, literal, prefix, &used, ctx),
            None => text,
        };
        headers.push((key, text));
    }
    Ok(Kind::Http { url, headers, sse })
}

/// A literal header value, with its credential (if any) moved out.
fn header_text(header: &str, value: &str, prefix: &str, used: &str, ctx: &mut Ctx<'_>) -> Text {
    let secret_header = is_secret_name(header) || header.eq_ignore_ascii_case("proxy-authorization");
    if let Some((scheme, credential)) = split_scheme(value)
        && (secret_header || looks_like_token(credential))
    {
        let what = if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token") {
            "TOKEN".to_owned()
        } else {
            env_name(&format!("{scheme}_auth"))
        };
        let mut text = Text::literal(&format!("{scheme} "));
        text.append(Text::var(&ctx.vars.secret(&[format!("{prefix}_{what}")], credential, ctx.server, used)));
        return text;
    }
    if !value.is_empty() && (secret_header || looks_like_token(value)) {
        let stem = header.strip_prefix("X-").or_else(|| header.strip_prefix("x-")).unwrap_or(header);
        return Text::var(&ctx.vars.secret(&[format!("{prefix}_{}", env_name(stem))], value, ctx.server, used));
    }
    Text::literal(value)
}

/// A literal that may be a URL, with its credentials moved out.
fn url_text(value: &str, prefix: &str, used: &str, ctx: &mut Ctx<'_>) -> Text {
    let mut text = Text::default();
    let mut at = 0;
    for secret in url_secrets(value) {
        text.push_text(&value[at..secret.range.start]);
        let name =
            ctx.vars.secret(&[format!("{prefix}_{}", secret.what)], &value[secret.range.clone()], ctx.server, used);
        text.push_var(&name, None);
        at = secret.range.end;
    }
    text.push_text(&value[at..]);
    text
}

/// The arguments, with credentials moved out: the value after or in a
/// credential flag (`--api-key X`, `--token=X`), the credential of a
/// `--header "Authorization: Bearer X"` (mcp-remote), passwords in URLs and
/// token-shaped arguments.
fn secret_args(raw: Vec<String>, name: &str, prefix: &str, ctx: &mut Ctx<'_>) -> Vec<Text> {
    let mut out = Vec::with_capacity(raw.len());
    let mut after_flag: Option<String> = None;
    let mut after_header = false;
    for (i, arg) in raw.iter().enumerate() {
        let used = format!("{name}: args[{i}]");
        let text = translate(arg, &used, ctx);
        let Some(literal) = text.as_literal().map(str::to_owned) else {
            after_flag = None;
            after_header = false;
            out.push(text);
            continue;
        };
        if let Some(flag) = after_flag.take() {
            out.push(Text::var(&ctx.vars.secret(
                &[format!("{prefix}_{}", env_name(&flag))],
                &literal,
                ctx.server,
                &used,
            )));
            continue;
        }
        if std::mem::take(&mut after_header)
            && let Some(colon) = literal.find(':')
        {
            // Keep the spelling (`Authorization:Bearer x` or `Name: value`).
            let value = literal[colon + 1..].trim_start();
            let mut text = Text::literal(&literal[..literal.len() - value.len()]);
            text.append(header_text(literal[..colon].trim(), value.trim_end(), prefix, &used, ctx));
            out.push(text);
            continue;
        }
        if literal.starts_with('-') {
            let flag = literal.trim_start_matches('-');
            if let Some((flag_name, value)) = flag.split_once('=')
                && is_secret_name(flag_name)
                && !value.is_empty()
            {
                let mut text = Text::literal(&literal[..literal.len() - value.len()]);
                text.append(Text::var(&ctx.vars.secret(
                    &[format!("{prefix}_{}", env_name(flag_name))],
                    value,
                    ctx.server,
                    &used,
                )));
                out.push(text);
                continue;
            }
            if is_secret_name(flag) {
                after_flag = Some(flag.to_owned());
            } else if flag == "header" || literal == "-H" {
                after_header = true;
            }
            out.push(text);
            continue;
        }
        if looks_like_token(&literal) {
            out.push(Text::var(&ctx.vars.secret(&[format!("{prefix}_SECRET")], &literal, ctx.server, &used)));
            continue;
        }
        out.push(url_text(&literal, prefix, &used, ctx));
    }
    out
}

/// An array of strings (numbers and booleans are taken as their text).
fn strings(value: Option<&Value>, key: &str, notes: &mut Vec<String>) -> Vec<String> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| {
                let s = scalar(v);
                if s.is_none() {
                    notes.push(format!("`{key}`: an item ({}) is not a string; left out", short(v)));
                }
                s
            })
            .collect(),
        Some(other) => {
            notes.push(format!("`{key}` ({}) is not an array; left out", short(other)));
            Vec::new()
        }
    }
}

/// An object of strings, in file order.
fn object(value: Option<&Value>, key: &str, notes: &mut Vec<String>) -> Vec<(String, String)> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| {
                let s = scalar(v);
                if s.is_none() {
                    notes.push(format!("`{key}.{k}` ({}) is not a string; left out", short(v)));
                }
                s.map(|s| (k.clone(), s))
            })
            .collect(),
        Some(other) => {
            notes.push(format!("`{key}` ({}) is not an object; left out", short(other)));
            Vec::new()
        }
    }
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A value for a note: its JSON, cut at 60 characters. Strings are not shown
/// (they may be secrets).
fn short(value: &Value) -> String {
    match value {
        Value::String(_) => "a string".into(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(o) => format!("an object with {} keys", o.len()),
        other => other.to_string(),
    }
}
