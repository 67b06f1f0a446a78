use std::time::Duration;

use crate::config::{ConfigError, DEFAULT_KEY_PREFIX, DEFAULT_SESSION_PREFIX, in_jail, load_str, load_str_jailed};

fn problems(text: &str) -> Vec<String> {
    match load_str_jailed(text) {
        Err(ConfigError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

#[test]
fn without_a_state_section_grants_stay_in_memory_for_an_hour() {
    let config = load_str_jailed("").unwrap();
    assert_eq!(config.state.redis_url, None);
    assert_eq!(config.state.key_prefix, DEFAULT_KEY_PREFIX);
    assert_eq!(config.disclosure.grant_ttl, Duration::from_secs(3600));
}

#[test]
fn redis_and_the_grant_ttl_are_configured_and_the_url_never_printed() {
    let text = "[disclosure]\ngrant_ttl = \"15m\"\n[state]\nredis_url = \"redis://:hunter2@127.0.0.1:6379/2\"\nkey_prefix = \"tg:\"";
    let config = load_str_jailed(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.disclosure.grant_ttl, Duration::from_secs(900));
    assert_eq!(config.state.redis_url.as_ref().map(|u| u.expose()), Some("redis://:hunter2@127.0.0.1:6379/2"));
    assert_eq!(config.state.key_prefix, "tg:");
    let shown = format!("{:?} {}", config.state, serde_json::to_string(&config.state).unwrap());
    assert!(!shown.contains("hunter2"), "the URL may hold a password: {shown}");
}

#[test]
fn the_redis_url_comes_from_the_environment_too() {
    let config = in_jail(|jail| {
        jail.set_env("TOOLGATE_STATE__REDIS_URL", "redis://10.0.0.5:6380/0");
        jail.set_env("TOOLGATE_DISCLOSURE__GRANT_TTL", "2h");
        load_str("")
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.state.redis_url.as_ref().map(|u| u.expose()), Some("redis://10.0.0.5:6380/0"));
    assert_eq!(config.disclosure.grant_ttl, Duration::from_secs(7200));
}

#[test]
fn bad_values_are_reported_with_their_paths() {
    let found = problems(
        "[disclosure]\ngrant_ttl = \"0s\"\n[state]\nredis_url = \"http://:secret@127.0.0.1:6379\"\nkey_prefix = \"\"",
    );
    assert_eq!(
        found,
        [
            "disclosure.grant_ttl: must be greater than zero",
            "state.redis_url: must be a `redis://host:port/db` URL (`rediss://` for TLS, `redis+unix://` for a socket)",
            "state.key_prefix: must not be empty or contain spaces or control characters",
        ]
    );
    assert!(!found.concat().contains("secret"), "the URL is never echoed");
    let found = problems("[state]\nredis_url = \"redis://127.0.0.1:6379/notanumber\"");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("state.redis_url: is not a usable Redis URL"), "{found:?}");
}

#[test]
fn unknown_state_keys_are_refused() {
    let message = match load_str_jailed("[state]\nredis = \"redis://127.0.0.1\"") {
        Err(ConfigError::Parse(message)) => message,
        other => panic!("expected a parse error, got {other:?}"),
    };
    assert!(message.starts_with("config text: state.redis: unknown key `redis`, expected one of"), "{message}");
}

#[test]
fn sessions_are_shared_by_default_with_redis_and_local_without() {
    let config = load_str_jailed("").unwrap();
    assert!(!config.state.shares_sessions());
    assert_eq!(config.state.session_prefix, DEFAULT_SESSION_PREFIX);
    let config = load_str_jailed("[state]\nredis_url = \"rediss://redis.example:6380/0\"").unwrap();
    assert!(config.state.shares_sessions(), "TLS URLs are accepted, and sessions shared by default");
    let config = load_str_jailed("[state]\nredis_url = \"redis://127.0.0.1:6379/0\"\nsessions = \"local\"").unwrap();
    assert!(!config.state.shares_sessions());
}

#[test]
fn credentials_come_from_the_environment_and_are_never_printed() {
    let config = in_jail(|jail| {
        jail.set_env("REDIS_USER", "toolgate");
        jail.set_env("REDIS_PASS", "hunter2");
        load_str(
            "[state]\nredis_url = \"redis://127.0.0.1:6379/0\"\nusername = \"${REDIS_USER}\"\npassword = \"${REDIS_PASS}\"",
        )
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config.state.username.as_ref().map(|u| u.expose()), Some("toolgate"));
    assert_eq!(config.state.password.as_ref().map(|u| u.expose()), Some("hunter2"));
    let shown = format!("{:?} {}", config.state, serde_json::to_string(&config.state).unwrap());
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[test]
fn settings_that_need_redis_or_tls_say_so() {
    let found = problems(
        "[state]\nsessions = \"shared\"\npassword = \"x\"\nsession_prefix = \"toolgate:grant:\"\nca_file = \"/nonexistent/ca.pem\"",
    );
    assert_eq!(
        found,
        [
            "state.sessions: needs `redis_url`",
            "state.password: needs `redis_url`",
            "state.ca_file: needs `redis_url`",
            "state.ca_file: cannot read /nonexistent/ca.pem",
            "state.session_prefix: must differ from `key_prefix`",
        ]
    );
    let found = problems("[state]\nredis_url = \"redis://127.0.0.1:6379/0\"\nca_file = \"/nonexistent/ca.pem\"");
    assert_eq!(
        found,
        [
            "state.ca_file: applies only to a TLS `rediss://` redis_url",
            "state.ca_file: cannot read /nonexistent/ca.pem"
        ]
    );
}
