//! What the gateway refuses to pass on, whatever the client: notifications
//! named like requests.

#[cfg(test)]
mod tests;

/// Namespaces of MCP request methods (`tools/call`, `resources/read`...).
/// Notifications live under `notifications/`.
const REQUEST_NAMESPACES: [&str; 10] = [
    "tools/",
    "resources/",
    "prompts/",
    "completion/",
    "logging/",
    "sampling/",
    "elicitation/",
    "roots/",
    "tasks/",
    "server/",
];

/// Whether `method` names an MCP request: a notification by that name is a
/// request without its id (sent by mistake or to provoke an effect without
/// an answer), which no upstream should act on.
pub(crate) fn is_request_method(method: &str) -> bool {
    matches!(method, "initialize" | "ping") || REQUEST_NAMESPACES.iter().any(|ns| method.starts_with(ns))
}
