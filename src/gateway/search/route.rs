//! The call tool (`[disclosure] call_tool_name`, `call_tool` by default): one
//! listed tool through which a host that calls only listed tools reaches
//! any tool the model found with the search tool.
//!
//! A call of it, `{"name": "<tool>", "arguments": {…}}`, is unwrapped
//! before the request is resolved into the very `tools/call` of `<tool>` a
//! client calling it directly would send, with everything else of the
//! request kept (`_meta` and its progress token, `task`, a 2026-07-28
//! retry's `requestState` and `inputResponses`). So every layer treats it as
//! that call: the client's policy and `calls_per_minute` (one routed call
//! counts once), the describe-first gate, argument checks, passthrough
//! tools, cancellation (the request is the same request), progress,
//! sampling, elicitation and roots mid-call, multi-round-trip retries and
//! tasks; and its result comes back as the upstream sent it. An unknown or
//! hidden name gets exactly what a direct call of an unknown tool gets.

use serde_json::{Map, Value, json};

use crate::jsonrpc::{Outcome, Request};
use crate::protocol::method;

/// What a request becomes before it is resolved.
pub enum Routed {
    /// Not a call of the call tool: served as it is.
    Untouched(Request),
    /// A call of the call tool, now the direct call it routes.
    Call(Request),
    /// A call of the call tool refused, with this answer.
    Refused(Outcome),
}

/// The call tool's names: its own, and the other synthesized tools it does
/// not route to.
pub struct CallTool<'a> {
    /// The call tool's name.
    pub name: &'a str,
    /// The other tools toolgate synthesizes (search, describe).
    pub synthesized: [&'a str; 2],
}

/// Whether `request` calls the call tool, named `name`.
pub fn calls(request: &Request, name: &str) -> bool {
    request.method == method::TOOLS_CALL
        && request.params.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str) == Some(name)
}

impl CallTool<'_> {
    /// `request`, a call of the call tool, as the direct call it routes.
    pub fn unwrap(&self, mut request: Request) -> Routed {
        let Some(Value::Object(params)) = request.params.as_mut() else {
            return Routed::Untouched(request);
        };
        // The call tool's own arguments, taken (not copied: the routed
        // arguments may be large); the request is dropped if refused.
        let mut outer = match params.get_mut("arguments") {
            Some(Value::Object(outer)) => std::mem::take(outer),
            _ => Map::new(),
        };
        let name = match outer.remove("name") {
            Some(Value::String(name)) if !name.is_empty() => name,
            _ => {
                return self.refused(&format!(
                    "`{}` needs the exact name of the tool to call: {{\"name\": \"TOOL_NAME\", \"arguments\": {{…}}}}",
                    self.name
                ));
            }
        };
        if name == self.name || self.synthesized.contains(&name.as_str()) {
            return self
                .refused(&format!("`{name}` is toolgate's own tool: call it directly, not through `{}`", self.name));
        }
        let arguments = match outer.remove("arguments") {
            Some(Value::Object(arguments)) => arguments,
            Some(_) => {
                return self.refused(&format!(
                    "`arguments` must be an object holding the arguments of `{name}`, as its fetched inputSchema says"
                ));
            }
            None => {
                return self.refused(&format!(
                    "`{}` needs `arguments`: an object with the arguments of `{name}` ({{}} if it takes none)",
                    self.name
                ));
            }
        };
        params.insert("name".into(), Value::String(name));
        params.insert("arguments".into(), Value::Object(arguments));
        Routed::Call(request)
    }

    fn refused(&self, why: &str) -> Routed {
        Routed::Refused(Outcome::Result(json!({"content": [{"type": "text", "text": why}], "isError": true})))
    }
}

/// The call tool's definition: short (it is listed in every search
/// listing), with the workflow it closes.
pub fn call_tool_definition(name: &str, search: &str, describe: Option<&str>) -> Value {
    let fetched = match describe {
        Some(describe) => format!("fetched with {describe}"),
        None => "fetched".to_owned(),
    };
    let mut properties = Map::new();
    properties.insert("name".into(), json!({"type": "string", "description": "Exact tool name"}));
    properties.insert("arguments".into(), json!({"type": "object", "description": "Its arguments ({} if none)"}));
    json!({
        "name": name,
        "description": format!(
            "Call a tool found with {search} by its exact name, with arguments following its schema {fetched}. \
             Returns that tool's result."
        ),
        "inputSchema": {"type": "object", "properties": properties, "required": ["name", "arguments"]},
    })
}

#[cfg(test)]
mod tests;
