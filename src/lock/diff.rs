//! Drift as people read it (`toolgate lock --diff` and `--check`): for each
//! tool, its kind and a unified diff of the definitions, pretty-printed
//! with sorted keys.

use similar::TextDiff;

use super::drift::{Drift, DriftKind};
use super::file::pretty;

/// The report of `drift` of upstream `upstream`.
pub fn render(upstream: &str, drift: &[Drift]) -> String {
    let mut out = String::new();
    for d in drift {
        let title = match (&d.kind, &d.from) {
            (DriftKind::Renamed, Some(from)) => format!("renamed: {upstream}/{from} -> {upstream}/{}", d.tool),
            (DriftKind::Changed, _) if d.schema_changed => {
                format!(
                    "changed: {upstream}/{} (its input schema too: calls are held under on_drift = \"hold\")",
                    d.tool
                )
            }
            (kind, _) => format!("{}: {upstream}/{}", kind.as_str(), d.tool),
        };
        out.push_str(&title);
        out.push('\n');
        let before = d.approved.as_ref().map(pretty).unwrap_or_default();
        let after = d.current.as_ref().map(pretty).unwrap_or_default();
        let diff = TextDiff::from_lines(&before, &after);
        let (old, new) = (
            format!("approved/{upstream}/{}", d.from.as_ref().unwrap_or(&d.tool)),
            format!("now/{upstream}/{}", d.tool),
        );
        out.push_str(&diff.unified_diff().context_radius(3).header(&old, &new).to_string());
        out.push('\n');
    }
    out
}
