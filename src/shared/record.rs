//! What a shared session's record holds, and its layout as one Redis hash.
//!
//! | field | value |
//! |---|---|
//! | `v` | the layout's version, `1` |
//! | `caller` | the identity the session is bound to (never a credential) |
//! | `version` | the negotiated protocol revision |
//! | `caps`, `info` | the client's `capabilities` and `clientInfo` (JSON) |
//! | `log` | the level of its last `logging/setLevel` (JSON, `null` if none) |
//! | `concerns` | its concern values (JSON object, `null` if none) |
//! | `s:<uri>` | a resource URI it subscribed to (value `1`) |
//! | `g:<tool>` | a description grant: the fingerprint of the definition fetched |
//! | `t:<task id>` | a task an upstream created for it: that upstream's name |
//!
//! A subscription, a grant, the log level and the concerns are each their
//! own field, so that a change writes that field alone (one subscription
//! more costs one short write, however many the session holds). Records
//! written before subscriptions had fields of their own hold them as a JSON
//! array in `subs`; they are read as well.
//!
//! One hash per session, so that one `PEXPIRE` keeps everything alive, one
//! `DEL` ends it, and adoption is one `HGETALL`. Nothing in it is secret:
//! no upstream credential, no client key.

use std::collections::HashMap;

use indexmap::IndexMap;
use serde_json::Value;

/// The layout's version (field `v`): a record of another one is not adopted.
const LAYOUT: &str = "1";
/// The prefix of grant fields.
pub const GRANT: &str = "g:";
/// The prefix of subscription fields.
pub const SUBSCRIPTION: &str = "s:";
/// The prefix of task fields.
pub const TASK: &str = "t:";

/// The fields of the parts of a session that change while it lives.
pub const LOG: &str = "log";
/// See [`LOG`].
pub const CONCERNS: &str = "concerns";
/// Where records of an earlier layout held every subscription, as one
/// JSON array (read, never written).
const OLD_SUBSCRIPTIONS: &str = "subs";

/// One shared session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// The caller the session belongs to ([`Caller::id`](crate::server::Caller::id)).
    pub caller: String,
    /// The negotiated revision.
    pub version: String,
    /// The client's `capabilities`.
    pub capabilities: Value,
    /// The client's `clientInfo`.
    pub client_info: Value,
    /// What changes while the session lives.
    pub state: Mutable,
    /// Description grants: tool name → definition fingerprint.
    pub grants: HashMap<String, u64>,
    /// Tasks its upstreams created for it: task id → upstream name.
    pub tasks: Vec<(String, String)>,
}

/// The parts of a session that change while it lives.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mutable {
    /// The level of the client's last `logging/setLevel`.
    pub log_level: Option<Value>,
    /// The client's concern values.
    pub concerns: Option<IndexMap<String, String>>,
    /// Resource URIs the session subscribed to.
    pub subscriptions: Vec<String>,
}

impl Mutable {
    /// Its fields, as written.
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut fields = vec![log_field(self.log_level.as_ref()), concerns_field(self.concerns.as_ref())];
        fields.extend(self.subscriptions.iter().map(|uri| (subscription_field(uri), "1".to_owned())));
        fields
    }
}

/// The field of a log level.
pub fn log_field(level: Option<&Value>) -> (String, String) {
    (LOG.into(), level.unwrap_or(&Value::Null).to_string())
}

/// The field of concern values.
pub fn concerns_field(concerns: Option<&IndexMap<String, String>>) -> (String, String) {
    let value = concerns.map_or_else(
        || "null".into(),
        |c| Value::from_iter(c.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str())))).to_string(),
    );
    (CONCERNS.into(), value)
}

/// The field of task `id`.
pub fn task_field(id: &str) -> String {
    format!("{TASK}{id}")
}

/// The field of a subscription to `uri`.
pub fn subscription_field(uri: &str) -> String {
    format!("{SUBSCRIPTION}{uri}")
}

impl Record {
    /// Every field, as written.
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut fields = vec![
            ("v".into(), LAYOUT.into()),
            ("caller".into(), self.caller.clone()),
            ("version".into(), self.version.clone()),
            ("caps".into(), self.capabilities.to_string()),
            ("info".into(), self.client_info.to_string()),
        ];
        fields.extend(self.state.fields());
        fields.extend(self.grants.iter().map(|(tool, fingerprint)| (grant_field(tool), fingerprint.to_string())));
        fields.extend(self.tasks.iter().map(|(id, upstream)| (task_field(id), upstream.clone())));
        fields
    }

    /// The record these fields hold (`HGETALL`), or `None` when there are
    /// none or they are not a record of this layout. A malformed part reads
    /// as absent (a session without that log level, those concerns …): the
    /// hash is toolgate's own, but Redis is a peer, and nothing it holds may
    /// make toolgate fail.
    pub fn from_fields(fields: HashMap<String, String>) -> Option<Self> {
        if fields.get("v").map(String::as_str) != Some(LAYOUT) {
            return None;
        }
        let json = |key: &str| fields.get(key).and_then(|v| serde_json::from_str::<Value>(v).ok());
        let concerns = json(CONCERNS).and_then(|v| match v {
            Value::Object(map) => {
                Some(map.into_iter().filter_map(|(k, v)| Some((k, v.as_str()?.to_owned()))).collect())
            }
            _ => None,
        });
        let mut subscriptions: Vec<String> = match json(OLD_SUBSCRIPTIONS) {
            Some(Value::Array(items)) => items.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        };
        subscriptions.extend(fields.keys().filter_map(|k| k.strip_prefix(SUBSCRIPTION)).map(str::to_owned));
        subscriptions.sort();
        subscriptions.dedup();
        let grants =
            fields.iter().filter_map(|(k, v)| Some((k.strip_prefix(GRANT)?.to_owned(), v.parse().ok()?))).collect();
        let mut tasks: Vec<(String, String)> =
            fields.iter().filter_map(|(k, v)| Some((k.strip_prefix(TASK)?.to_owned(), v.clone()))).collect();
        tasks.sort();
        Some(Self {
            caller: fields.get("caller")?.clone(),
            version: fields.get("version")?.clone(),
            capabilities: json("caps").unwrap_or_else(|| Value::Object(Default::default())),
            client_info: json("info").unwrap_or(Value::Null),
            state: Mutable { log_level: json(LOG).filter(|v| !v.is_null()), concerns, subscriptions },
            grants,
            tasks,
        })
    }
}

/// The field of the grant for `tool`.
pub fn grant_field(tool: &str) -> String {
    format!("{GRANT}{tool}")
}
