use crate::config::{ConfigError, IdentityMode, load_str_jailed};

fn problems(text: &str) -> Vec<String> {
    match load_str_jailed(text) {
        Err(ConfigError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        other => panic!("expected problems, got {other:?}"),
    }
}

const UPSTREAMS: &str = "[[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
                         [[upstream]]\nname = \"kid\"\ncommand = \"server\"\n";

#[test]
fn per_client_credentials_must_name_an_upstream_of_their_kind_and_never_echo_a_value() {
    let text = format!(
        "{UPSTREAMS}[[auth.clients]]\nname = \"alice\"\napi_key = \"0123456789abcdef0\"\n\
         upstream_headers = {{ kid = {{ X = \"a\" }}, ghost = {{ X = \"b\" }}, web = {{ Authorization = \"bad\\nsecret-value\" }} }}\n\
         upstream_env = {{ web = {{ A = \"b\" }}, kid = {{ \"A=B\" = \"c\" }} }}\n"
    );
    let found = problems(&text).join("\n");
    for want in [
        "auth.clients[0].upstream_headers.kid: `kid` runs a `command`",
        "auth.clients[0].upstream_headers.ghost: `ghost` is not a configured upstream",
        "auth.clients[0].upstream_headers.web.Authorization: invalid HTTP header value",
        "auth.clients[0].upstream_env.web: `web` is an HTTP upstream",
        "auth.clients[0].upstream_env.kid.\"A=B\": invalid environment variable name",
    ] {
        assert!(found.contains(want), "missing {want:?} in:\n{found}");
    }
    assert!(!found.contains("secret-value"), "{found}");
}

#[test]
fn identity_modes_need_auth_their_settings_and_for_exchanges_jwt_clients() {
    let text = "[[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
                [upstream.identity]\nmode = \"assertion\"\ntoken_endpoint = \"http://127.0.0.1:9/token\"\n";
    let found = problems(text).join("\n");
    for want in [
        "upstream[0].identity: needs [auth]",
        "identity.issuer: is needed",
        "identity.signing_keys: needs a key",
        "upstream[0].identity.token_endpoint: applies only to `token_exchange`",
    ] {
        assert!(found.contains(want), "missing {want:?} in:\n{found}");
    }
    let text = "[[auth.clients]]\nname = \"alice\"\napi_key = \"0123456789abcdef0\"\n\
                [[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
                [upstream.identity]\nmode = \"token_exchange\"\nparameters = { grant_type = \"x\" }\n";
    let found = problems(text).join("\n");
    for want in [
        "upstream[0].identity.mode: trades the client's own access token",
        "upstream[0].identity.token_endpoint: is needed",
        "upstream[0].identity.client_id: is needed",
        "upstream[0].identity.client_secret: is needed",
        "upstream[0].identity: needs `audience` or `resource`",
        "upstream[0].identity.parameters.grant_type: is set by toolgate",
    ] {
        assert!(found.contains(want), "missing {want:?} in:\n{found}");
    }
}

#[test]
fn a_complete_exchange_configuration_loads_and_keeps_its_secret_hidden() {
    let text = "[auth.jwt]\nissuer = \"http://127.0.0.1:9\"\naudiences = [\"http://127.0.0.1/mcp\"]\n\
                jwks_url = \"http://127.0.0.1:9/jwks\"\n\
                [[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
                [upstream.identity]\nmode = \"jwt_bearer\"\ntoken_endpoint = \"http://127.0.0.1:9/token\"\n\
                client_id = \"toolgate\"\nclient_secret = \"hunter2-secret\"\nresource = \"http://api\"\n";
    let config = load_str_jailed(text).unwrap_or_else(|e| panic!("{e}"));
    let identity = config.upstreams[0].identity.as_ref().unwrap();
    assert_eq!(identity.mode, IdentityMode::JwtBearer);
    let shown = format!("{identity:?} {}", serde_json::to_string(identity).unwrap());
    assert!(!shown.contains("hunter2"), "{shown}");
}

#[test]
fn private_key_jwt_needs_a_signing_key_and_no_secret() {
    let text = "[auth.jwt]\nissuer = \"http://127.0.0.1:9\"\naudiences = [\"http://127.0.0.1/mcp\"]\n\
                jwks_url = \"http://127.0.0.1:9/jwks\"\n\
                [[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
                [upstream.identity]\nmode = \"token_exchange\"\ntoken_endpoint = \"http://127.0.0.1:9/token\"\n\
                client_id = \"toolgate\"\nclient_secret = \"s\"\nclient_auth = \"private_key_jwt\"\naudience = \"a\"\n";
    let found = problems(text).join("\n");
    for want in ["upstream[0].identity.client_secret: is not used with", "identity.signing_keys: needs a key"] {
        assert!(found.contains(want), "missing {want:?} in:\n{found}");
    }
}
