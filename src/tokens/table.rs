//! The report as a readable plain-text table.

use std::fmt::{self, Write as _};

use super::report::{Report, Section, Totals, UpstreamReport};

/// Widest name column; longer names overflow their row rather than widen
/// every row.
const MAX_NAME_WIDTH: usize = 48;

impl Report {
    /// The report as text; `per_tool` adds one row per tool.
    pub fn render(&self, per_tool: bool) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = self.write(&mut out, per_tool);
        out
    }

    fn write(&self, out: &mut String, per_tool: bool) -> fmt::Result {
        writeln!(out, "toolgate token report")?;
        writeln!(out, "encoding: {} (tiktoken-rs)", self.encoding)?;
        writeln!(out, "counted:  {}", self.projection)?;
        for section in &self.sections {
            writeln!(out)?;
            write_section(out, section, per_tool)?;
        }
        if self.sections.len() > 1 {
            let t = &self.total;
            writeln!(out)?;
            writeln!(
                out,
                "== all {} catalogs: {} tools, full {}, minimal {}, saving {:.1}% (minimal/full {:.1}%); \
                 tools/list JSON {} -> {}",
                self.sections.len(),
                t.tools,
                t.full,
                t.minimal,
                t.saving_percent,
                100.0 * t.ratio(),
                t.full_list_json,
                t.minimal_list_json
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(true))
    }
}

fn write_section(out: &mut String, s: &Section, per_tool: bool) -> fmt::Result {
    writeln!(out, "== {}", s.source)?;
    let width = s
        .upstreams
        .iter()
        .flat_map(|u| u.tools.iter().map(|t| t.name.chars().count()))
        .chain([22])
        .max()
        .unwrap_or(22)
        .min(MAX_NAME_WIDTH);
    for u in &s.upstreams {
        write_upstream(out, u, width, per_tool)?;
    }
    if s.upstreams.len() > 1 {
        write_totals(out, "all upstreams", &s.totals, width)?;
    }
    let a = &s.added;
    let mut added = Vec::new();
    if let Some(n) = a.describe_tool {
        added.push(format!("describe tool {n} (in tools/list)"));
    }
    if let Some(n) = a.resource_entry {
        added.push(format!("resource entry {n} (resources/list)"));
    }
    if let Some(n) = a.template_entry {
        added.push(format!("template entry {n} (resources/templates/list)"));
    }
    if !added.is_empty() {
        writeln!(out, "toolgate adds: {}", added.join(", "))?;
    }
    writeln!(
        out,
        "served tools/list: projection {} (minimal tools + describe tool), JSON {}",
        s.served_projection, s.served_list_json
    )?;
    if !s.sessions.is_empty() {
        writeln!(
            out,
            "sessions (served list + resource entry + N fetched tools, one read each; without toolgate {}):",
            s.totals.full
        )?;
        for c in &s.sessions {
            writeln!(
                out,
                "  N={}: typical {} (saving {:.1}%), worst {} (the {} largest)",
                c.fetched, c.typical, c.saving_percent, c.worst, c.fetched
            )?;
        }
    }
    for p in &s.problems {
        writeln!(out, "problem: {p}")?;
    }
    Ok(())
}

fn write_upstream(out: &mut String, u: &UpstreamReport, width: usize, per_tool: bool) -> fmt::Result {
    let mut head = u.name.clone();
    if let Some(package) = &u.package {
        write!(head, "  {package}")?;
        if let Some(version) = &u.version {
            write!(head, " {version}")?;
        }
    }
    if let Some(info) = &u.server_info {
        let name = info.get("name").and_then(|v| v.as_str()).unwrap_or("?");
        let version = info.get("version").and_then(|v| v.as_str()).unwrap_or("?");
        write!(head, "  (serverInfo {name} {version})")?;
    }
    writeln!(out, "{head}")?;
    if let Some(error) = &u.error {
        writeln!(out, "  error: {error}")?;
        return Ok(());
    }
    if per_tool && !u.tools.is_empty() {
        writeln!(out, "  {:<width$} {:>7} {:>7} {:>7} {:>7}", "tool", "full", "minimal", "saving", "fetch")?;
        for t in &u.tools {
            let saving = super::saving_percent(t.full, t.minimal);
            writeln!(out, "  {:<width$} {:>7} {:>7} {:>6.1}% {:>7}", t.name, t.full, t.minimal, saving, t.fetch)?;
        }
    }
    write_totals(out, &format!("total ({} tools)", u.totals.tools), &u.totals, width)
}

fn write_totals(out: &mut String, label: &str, t: &Totals, width: usize) -> fmt::Result {
    writeln!(out, "  {:<width$} {:>7} {:>7} {:>6.1}%", label, t.full, t.minimal, t.saving_percent)?;
    writeln!(out, "  {:<width$} {:>7} {:>7}", "tools/list JSON", t.full_list_json, t.minimal_list_json)
}
