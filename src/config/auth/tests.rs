use figment::Figment;
use figment::providers::{Format, Toml};

use super::*;
use crate::config::{Config, ConfigError, load_str, load_str_in};

/// Parses TOML into a `Config` without expanding anything.
fn parse(toml: &str) -> Config {
    Figment::from(Toml::string(toml)).extract().unwrap_or_else(|e| panic!("test config parses: {e}"))
}

fn problems(toml: &str) -> Vec<String> {
    parse(toml).validate().iter().map(ToString::to_string).collect()
}

const UPSTREAMS: &str = r#"
    [[upstream]]
    name = "github"
    url = "https://api.example.com/mcp"
    [[upstream]]
    name = "time"
    command = "time-server"
"#;

const SHA_OF_SECRET: &str = "2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b";

use crate::config::in_jail;

#[test]
fn the_issue_example_is_valid_and_typed() {
    let toml = format!(
        r#"{UPSTREAMS}
        [auth]
        allow_anonymous = false
        [[auth.clients]]
        name = "alice"
        api_key = "0123456789abcdef-alice"
        upstreams = ["github", "time"]
        tools = ["github__get_*", "time__*"]
        deny_tools = ["*__delete_*"]
        max_sessions = 20
        calls_per_minute = 600
        [[auth.clients]]
        name = "ci"
        api_key_sha256 = "{SHA_OF_SECRET}"
        [[auth.clients]]
        name = "default"
        tools = ["time__*"]
        [auth.jwt]
        issuer = "https://idp.example.com"
        audiences = ["https://gateway.example.com/mcp"]
        jwks_url = "https://idp.example.com/.well-known/jwks.json"
        client_claim = "sub"
        authorization_servers = ["https://idp.example.com"]
        scopes_supported = ["mcp"]
        "#
    );
    assert_eq!(problems(&toml), Vec::<String>::new());
    let auth = parse(&toml).auth;
    assert!(auth.is_enabled());
    let alice = &auth.clients[0];
    assert_eq!(alice.api_key.as_ref().map(Secret::expose), Some("0123456789abcdef-alice"));
    assert_eq!(alice.upstreams.as_deref(), Some(&["github".to_owned(), "time".to_owned()][..]));
    assert_eq!(alice.max_sessions, Some(20));
    assert_eq!(alice.calls_per_minute, Some(600));
    let ci = &auth.clients[1];
    assert_eq!(ci.tools, ["*"], "tools defaults to every tool");
    assert_eq!(ci.upstreams, None, "upstreams defaults to all");
    assert!(ci.deny_tools.is_empty());
    let jwt = auth.jwt.expect("jwt is set");
    assert_eq!(jwt.resource(), Some("https://gateway.example.com/mcp"));
    assert_eq!(jwt.authorization_servers(), ["https://idp.example.com"]);
}

#[test]
fn defaults_need_nothing_and_jwt_defaults_are_documented() {
    assert_eq!(AuthConfig::default(), parse("").auth);
    assert!(!AuthConfig::default().is_enabled());
    let toml = r#"
        [auth.jwt]
        issuer = "https://idp.example.com"
        audiences = ["https://gateway.example.com/mcp"]
        jwks_url = "https://idp.example.com/jwks"
    "#;
    assert_eq!(problems(toml), Vec::<String>::new());
    let jwt = parse(toml).auth.jwt.expect("jwt is set");
    assert_eq!(jwt.client_claim, "sub");
    assert_eq!(jwt.authorization_servers(), ["https://idp.example.com"], "defaults to the issuer");
    assert!(jwt.scopes_supported.is_empty());
}

#[test]
fn unknown_keys_are_refused() {
    for toml in [
        "[auth]\nallow_anonymus = true",
        "[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef\"\ntool = [\"*\"]",
        "[auth.jwt]\nissuer = \"x\"\naudiences = [\"x\"]\njwks_url = \"x\"\nscope = \"mcp\"",
    ] {
        let result: Result<Config, _> = Figment::from(Toml::string(toml)).extract();
        let error = result.expect_err(toml).to_string();
        assert!(error.contains("unknown field"), "{toml}: {error}");
    }
}

#[test]
fn several_mistakes_are_all_reported() {
    let toml = format!(
        r#"{UPSTREAMS}
        [auth]
        allow_anonymous = true

        [[auth.clients]]
        name = "Alice"
        api_key = "short"

        [[auth.clients]]
        name = "bob"
        api_key = "0123456789abcdef bob"
        api_key_sha256 = "{SHA_OF_SECRET}"

        [[auth.clients]]
        name = "bob"
        api_key_sha256 = "not-hex"
        upstreams = ["github", "gitlab"]
        tools = ["", "github__[get"]
        deny_tools = ["ok_*"]
        max_sessions = 0
        calls_per_minute = 0

        [[auth.clients]]
        name = "carol"
        api_key_sha256 = "{SHA_OF_SECRET}"

        [[auth.clients]]
        name = "this-name-is-far-too-long-for-a-metrics-label-so-it-is-refused-by-toolgate"
        api_key = "0123456789abcdefghij"

        [auth.jwt]
        issuer = " "
        audiences = ["gateway", ""]
        jwks_url = "http://idp.example.com/jwks"
        jwks_file = "jwks.json"
        client_claim = ""
        authorization_servers = ["ftp://idp.example.com"]
        scopes_supported = ["mcp", "two words"]
        "#
    );
    insta::assert_snapshot!(problems(&toml).join("\n"));
}

#[test]
fn a_client_needs_a_key_unless_it_is_a_jwt_policy() {
    let keyless = "[[auth.clients]]\nname = \"bob\"\ntools = [\"time__*\"]";
    assert_eq!(
        problems(keyless),
        ["auth.clients[0]: needs `api_key` or `api_key_sha256` (an entry without a key only gives a JWT client \
          its policy, and [auth.jwt] is not set)"]
    );
    let with_jwt = format!(
        "{keyless}\n[auth.jwt]\nissuer = \"https://idp\"\naudiences = [\"https://gw/mcp\"]\njwks_url = \"https://idp/k\""
    );
    assert_eq!(problems(&with_jwt), Vec::<String>::new());
}

#[test]
fn api_key_sha256_accepts_either_case_and_nothing_else() {
    assert_eq!(decode_sha256_hex(SHA_OF_SECRET), Some(crate::auth::sha256(b"secret")));
    assert_eq!(decode_sha256_hex(&SHA_OF_SECRET.to_uppercase()), Some(crate::auth::sha256(b"secret")));
    for bad in ["", &SHA_OF_SECRET[1..], &format!("{SHA_OF_SECRET}0"), &SHA_OF_SECRET.replace('a', "g"), "+1"] {
        assert_eq!(decode_sha256_hex(bad), None, "{bad}");
    }
    // Multi-byte characters must not be split into digits.
    assert_eq!(decode_sha256_hex(&"é".repeat(32)), None);
}

#[test]
fn two_clients_with_one_key_are_refused_whichever_way_it_is_written() {
    let toml = format!(
        r#"
        [[auth.clients]]
        name = "a"
        api_key = "secret-secret-secret"
        [[auth.clients]]
        name = "b"
        api_key_sha256 = "{}"
        "#,
        hex(&crate::auth::sha256(b"secret-secret-secret"))
    );
    assert_eq!(problems(&toml), ["auth.clients[1]: has the same key as auth.clients[0]: give each client its own"]);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn upstream_names_are_checked_against_the_configured_upstreams() {
    let toml = format!(
        "{UPSTREAMS}\n[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef\"\nupstreams = [\"time\", \"files\"]"
    );
    assert_eq!(
        problems(&toml),
        ["auth.clients[0].upstreams[1]: `files` is not a configured upstream (known: `github`, `time`)"]
    );
    let none = "[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef\"\nupstreams = [\"x\"]";
    assert_eq!(problems(none), ["auth.clients[0].upstreams[0]: `x` is not a configured upstream (known: none)"]);
}

#[test]
fn client_names_are_lowercase_words() {
    for good in ["alice", "ci-2", "a_b", "0"] {
        let toml = format!("[[auth.clients]]\nname = \"{good}\"\napi_key = \"0123456789abcdef\"");
        assert_eq!(problems(&toml), Vec::<String>::new(), "{good}");
    }
    for bad in ["Alice", "a.b", "a b", "ä", ""] {
        let toml = format!("[[auth.clients]]\nname = \"{bad}\"\napi_key = \"0123456789abcdef\"");
        assert_eq!(problems(&toml).len(), 1, "{bad}");
        assert!(problems(&toml)[0].starts_with("auth.clients[0].name: "), "{bad}");
    }
}

#[test]
fn non_loopback_listen_without_credentials_needs_allow_anonymous() {
    let expected = "auth.allow_anonymous: toolgate would serve anyone who can reach 0.0.0.0:8080: configure \
                    credentials ([[auth.clients]] with an api_key, or [auth.jwt]), or set allow_anonymous = true to \
                    serve without authentication";
    assert_eq!(problems("[server]\nlisten = \"0.0.0.0:8080\""), [expected]);
    assert_eq!(problems("[server]\nlisten = \"0.0.0.0:8080\"\n[auth]\nallow_anonymous = true"), Vec::<String>::new());
    assert_eq!(problems("[server]\nlisten = \"192.168.1.5:0\"").len(), 1);
    assert_eq!(problems("[server]\nlisten = \"[::]:8080\"").len(), 1);
    for loopback in ["127.0.0.1:8080", "127.3.2.1:0", "[::1]:8080", "[::ffff:127.0.0.1]:8080"] {
        assert_eq!(problems(&format!("[server]\nlisten = \"{loopback}\"")), Vec::<String>::new(), "{loopback}");
    }
    let keyed = "[server]\nlisten = \"0.0.0.0:8080\"\n[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef\"";
    assert_eq!(problems(keyed), Vec::<String>::new());
}

#[test]
fn the_listen_rule_names_the_environment_override() {
    let found = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__LISTEN", "0.0.0.0:8080");
        match load_str("") {
            Err(ConfigError::Invalid(problems)) => problems,
            other => panic!("expected problems, got {other:?}"),
        }
    });
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].path, "auth.allow_anonymous");
    // The opt-in can come from the environment too.
    let config = in_jail(|jail| {
        jail.set_env("TOOLGATE_SERVER__LISTEN", "0.0.0.0:8080");
        jail.set_env("TOOLGATE_AUTH__ALLOW_ANONYMOUS", "true");
        load_str("")
    });
    assert!(config.unwrap_or_else(|e| panic!("{e}")).auth.allow_anonymous);
}

#[test]
fn allow_anonymous_with_credentials_is_a_mistake() {
    let toml = "[auth]\nallow_anonymous = true\n[[auth.clients]]\nname = \"a\"\napi_key = \"0123456789abcdef\"";
    assert_eq!(
        problems(toml),
        ["auth.allow_anonymous: has no effect when credentials are configured (every request must then carry one): \
          remove it"]
    );
}

#[test]
fn jwks_urls_must_be_https_except_on_loopback() {
    let jwt = |url: &str| {
        format!("[auth.jwt]\nissuer = \"https://idp\"\naudiences = [\"https://gw/mcp\"]\njwks_url = \"{url}\"")
    };
    for good in
        ["https://idp.example.com/jwks", "http://127.0.0.1:9999/jwks", "http://localhost/jwks", "http://[::1]:1/k"]
    {
        assert_eq!(problems(&jwt(good)), Vec::<String>::new(), "{good}");
    }
    assert_eq!(
        problems(&jwt("http://idp.example.com/jwks")),
        [
            "auth.jwt.jwks_url: `http://idp.example.com/jwks` must use https:// (http:// is accepted only on a loopback host)"
        ]
    );
    assert_eq!(
        problems(&jwt("file:///etc/jwks.json")),
        ["auth.jwt.jwks_url: `file:///etc/jwks.json` must be an https:// URL"]
    );
    assert!(problems(&jwt("not a url"))[0].starts_with("auth.jwt.jwks_url: `not a url` is not a valid URL"));
}

#[test]
fn exactly_one_key_source_and_a_usable_first_audience() {
    let base = "[auth.jwt]\nissuer = \"https://idp\"\n";
    assert_eq!(
        problems(&format!("{base}audiences = [\"https://gw/mcp\"]")),
        ["auth.jwt: needs `jwks_url` or `jwks_file` (where the issuer's keys are)"]
    );
    assert_eq!(
        problems(&format!("{base}audiences = []\njwks_url = \"https://idp/k\"")),
        ["auth.jwt.audiences: must name at least one audience; the first is toolgate's public MCP URL, e.g. \
          \"https://gateway.example.com/mcp\""]
    );
    assert_eq!(
        problems(&format!("{base}audiences = [\"https://gw/mcp#x\", \"api://other\"]\njwks_url = \"https://idp/k\"")),
        ["auth.jwt.audiences[0]: the first audience is toolgate's public MCP URL: `https://gw/mcp#x` must not have a \
          fragment (`#…`)"]
    );
}

#[test]
fn api_keys_come_from_the_environment_and_are_never_shown() {
    let config = in_jail(|jail| {
        jail.set_env("ALICE_KEY", "k-0123456789abcdef-from-env");
        load_str("[[auth.clients]]\nname = \"alice\"\napi_key = \"${ALICE_KEY}\"")
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let key = config.auth.clients[0].api_key.as_ref().expect("key set");
    assert_eq!(key.expose(), "k-0123456789abcdef-from-env");
    let debug = format!("{config:?}");
    assert!(!debug.contains("0123456789abcdef"), "Debug shows the key: {debug}");
    assert!(debug.contains("<redacted>"));
    let json = serde_json::to_string(&config).expect("serializes");
    assert!(!json.contains("0123456789abcdef"), "Serialize shows the key: {json}");
    assert!(json.contains(r#""api_key":"<redacted>""#), "{json}");

    let missing = in_jail(|jail| {
        jail.clear_env();
        match load_str("[[auth.clients]]\nname = \"alice\"\napi_key = \"${ALICE_KEY}\"") {
            Err(ConfigError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            other => panic!("expected problems, got {other:?}"),
        }
    });
    assert_eq!(missing, ["auth.clients[0].api_key: environment variable ALICE_KEY is not set"]);
}

#[test]
fn a_short_key_is_reported_without_echoing_it() {
    let found = problems("[[auth.clients]]\nname = \"a\"\napi_key = \"hunter2\"");
    assert_eq!(found, ["auth.clients[0].api_key: is too short: use at least 16 random characters"]);
    assert!(!found[0].contains("hunter2"));
}

#[test]
fn jwks_file_is_relative_to_the_config_file_and_must_exist() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("jwks.json"), r#"{"keys":[]}"#).expect("write");
    let toml = "[auth.jwt]\nissuer = \"https://idp\"\naudiences = [\"https://gw/mcp\"]\njwks_file = \"jwks.json\"";
    let config = load_str_in(toml, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let file = config.auth.jwt.and_then(|j| j.jwks_file).expect("file set");
    assert_eq!(file, std::path::absolute(dir.path()).expect("absolute").join("jwks.json"));

    let missing = toml.replace("jwks.json", "nope.json");
    match load_str_in(&missing, dir.path()) {
        Err(ConfigError::Invalid(problems)) => {
            assert_eq!(problems.len(), 1);
            assert_eq!(problems[0].path, "auth.jwt.jwks_file");
            assert!(problems[0].message.starts_with("cannot read `"), "{}", problems[0].message);
        }
        other => panic!("expected problems, got {other:?}"),
    }
}
