//! Property tests of loading `[auth]`: whatever a file says, loading never
//! panics, every problem is reported under `auth` with its path, and what
//! loads builds an authenticator and a policy for every client; a
//! well-formed `[auth]` always loads, as written.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::auth::{Authenticator, ClientPolicy};
use crate::config::{ConfigError, load_str_jailed as load_jailed};

/// Upstreams every generated config has (clients may name others).
fn with_upstreams(auth: Value) -> String {
    let config = json!({
        "auth": auth,
        "upstream": [
            {"name": "github", "url": "https://api.example.com/mcp"},
            {"name": "time", "command": "time-server"},
        ],
    });
    let value = toml::Value::try_from(config).expect("JSON without nulls is TOML");
    toml::to_string(&value).expect("TOML renders")
}

/// One `[[auth.clients]]` entry, well-formed or not.
fn any_client() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9_ A-Z-]{0,10}",
        prop::option::of("[ -~]{0,24}"),
        prop::option::of("[0-9a-fA-Fg]{0,66}"),
        prop::option::of(prop::collection::vec(prop::sample::select(vec!["github", "time", "nope", ""]), 0..3)),
        prop::option::of(prop::collection::vec("[a-z_*?\\[\\]{},]{0,8}", 0..3)),
        prop::option::of(prop::collection::vec("[a-z_*?\\[\\]{},]{0,8}", 0..3)),
        prop::option::of(0u32..4),
        prop::option::of(0u32..4),
    )
        .prop_map(|(name, key, sha, upstreams, tools, deny, sessions, calls)| {
            let mut client = json!({"name": name});
            let fields = [
                ("api_key", key.map(Value::from)),
                ("api_key_sha256", sha.map(Value::from)),
                ("upstreams", upstreams.map(Value::from)),
                ("tools", tools.map(Value::from)),
                ("deny_tools", deny.map(Value::from)),
                ("max_sessions", sessions.map(Value::from)),
                ("calls_per_minute", calls.map(Value::from)),
            ];
            for (key, value) in fields {
                if let Some(value) = value {
                    client[key] = value;
                }
            }
            client
        })
}

/// A valid API-key client named `name`.
fn valid_client(name: String) -> impl Strategy<Value = Value> {
    (
        "[A-Za-z0-9._~+/=-]{16,40}",
        prop::option::of(prop::sample::subsequence(vec!["github", "time"], 1..=2)),
        prop::collection::vec("[a-z_]{1,6}\\*?", 1..3),
        prop::collection::vec("\\*__[a-z]{1,6}_\\*", 0..2),
        prop::option::of(1u32..1000),
        prop::option::of(1u32..10_000),
    )
        .prop_map(move |(key, upstreams, tools, deny, sessions, calls)| {
            let mut client = json!({"name": name, "api_key": key, "tools": tools, "deny_tools": deny});
            if let Some(upstreams) = upstreams {
                client["upstreams"] = json!(upstreams);
            }
            if let Some(n) = sessions {
                client["max_sessions"] = json!(n);
            }
            if let Some(n) = calls {
                client["calls_per_minute"] = json!(n);
            }
            client
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_auth_section_loads_or_names_its_problems(
        clients in prop::collection::vec(any_client(), 0..4),
        allow_anonymous in any::<bool>(),
    ) {
        let text = with_upstreams(json!({"allow_anonymous": allow_anonymous, "clients": clients}));
        match load_jailed(&text) {
            Ok(config) => {
                prop_assert!(Authenticator::new(&config.auth).is_ok(), "loaded but does not build: {text}");
                for client in &config.auth.clients {
                    prop_assert!(ClientPolicy::from_config(client).is_ok(), "{text}");
                }
            }
            Err(ConfigError::Invalid(problems)) => {
                prop_assert!(!problems.is_empty());
                for p in &problems {
                    prop_assert!(p.path.starts_with("auth"), "{p} in\n{text}");
                    prop_assert!(!p.message.is_empty());
                }
            }
            // A value of the wrong type (e.g. a negative count) stops at typing.
            Err(ConfigError::Parse(message)) => prop_assert!(!message.is_empty()),
        }
    }

    #[test]
    fn a_well_formed_auth_section_loads_as_written(
        clients in prop::collection::btree_set("[a-z0-9_-]{1,12}", 1..4)
            .prop_flat_map(|names| names.into_iter().map(valid_client).collect::<Vec<_>>()),
    ) {
        let text = with_upstreams(json!({"clients": clients}));
        let config = load_jailed(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(config.auth.clients.len(), clients.len());
        for (loaded, written) in config.auth.clients.iter().zip(&clients) {
            prop_assert_eq!(&loaded.name, written["name"].as_str().unwrap_or_default());
            prop_assert_eq!(json!(loaded.tools), written["tools"].clone());
            prop_assert_eq!(loaded.max_sessions.map(Value::from), written.get("max_sessions").cloned());
            prop_assert_eq!(loaded.calls_per_minute.map(Value::from), written.get("calls_per_minute").cloned());
            prop_assert_eq!(
                loaded.api_key.as_ref().map(|k| k.expose().to_owned()),
                written.get("api_key").and_then(Value::as_str).map(str::to_owned)
            );
            prop_assert!(ClientPolicy::from_config(loaded).is_ok());
        }
        prop_assert!(Authenticator::new(&config.auth).is_ok());
    }
}
