//! The gateway's own answer to `initialize`.

use serde_json::{Map, Value, json};

use super::Gateway;
use crate::disclosure;
use crate::protocol::Version;
use crate::server::ServerOffer;

impl Gateway {
    /// What toolgate offers in its `initialize` result: its identity, the
    /// capabilities it honours for this client, and instructions (the
    /// disclosure workflow, then each upstream's own instructions).
    pub(crate) fn offer(&self, version: Version) -> ServerOffer {
        let view = self.catalog();
        let catalog = &view.catalog;
        let any = |cap: &str| self.upstreams.iter().any(|u| u.has(cap));
        let any_flag =
            |cap: &str, flag: &str| self.upstreams.iter().any(|u| u.hello().is_some_and(|h| h.flag(cap, flag)));

        let mut caps = Map::new();
        caps.insert("tools".into(), json!({"listChanged": true}));
        // Always: toolgate serves the descriptions resource itself.
        let mut resources = json!({"listChanged": true});
        if any_flag("resources", "subscribe") {
            resources["subscribe"] = json!(true);
        }
        caps.insert("resources".into(), resources);
        if any("prompts") {
            caps.insert("prompts".into(), json!({"listChanged": true}));
        }
        if any("logging") {
            caps.insert("logging".into(), json!({}));
        }
        if any("completions") || catalog.has_progressive() {
            caps.insert("completions".into(), json!({}));
        }

        let mut info = json!({"name": "toolgate", "version": env!("CARGO_PKG_VERSION")});
        if version >= Version::V2025_06_18 {
            info["title"] = json!("toolgate MCP gateway");
        }

        let mut sections = Vec::new();
        if catalog.has_progressive() {
            sections.push(disclosure::instructions(catalog.describe_tool_name()));
        }
        for up in &self.upstreams {
            if let Some(text) = up.hello().and_then(|h| h.instructions.clone()).filter(|t| !t.trim().is_empty()) {
                sections.push(if self.upstreams.len() == 1 { text } else { format!("## {}\n{text}", up.label) });
            }
        }
        let instructions = (!sections.is_empty()).then(|| sections.join("\n\n"));
        ServerOffer { capabilities: Value::Object(caps), server_info: info, instructions }
    }
}
