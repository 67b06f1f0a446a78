use crate::config::load_str;

const DECLARED: &str = r#"
[[concerns]]
name = "security"
description = "Security level required for the operation"
values = ["high", "medium", "low"]
default = "medium"

[[concerns]]
name = "cost"
description = "What a call costs"
values = ["minimal", "moderate"]
"#;

fn problems(text: &str) -> Vec<String> {
    match load_str(text) {
        Ok(_) => Vec::new(),
        Err(crate::config::ConfigError::Invalid(problems)) => problems.iter().map(ToString::to_string).collect(),
        Err(e) => vec![e.to_string()],
    }
}

#[test]
fn the_issue_example_loads() {
    let text = format!(
        "{DECLARED}
[[upstream]]
name = \"github\"
command = \"gh-mcp\"
concerns = {{ cost = \"minimal\" }}

[upstream.tools.delete_repo]
concerns = {{ security = \"high\" }}

[auth]
[[auth.clients]]
name = \"ci\"
api_key = \"ci-key-0123456789abcdef\"
concerns = {{ security = \"high\" }}
"
    );
    let config = load_str(&text).expect("valid");
    assert_eq!(config.concerns.len(), 2);
    assert_eq!(config.concerns[0].default.as_deref(), Some("medium"));
    assert_eq!(config.upstreams[0].concerns["cost"], "minimal");
    assert_eq!(config.upstreams[0].tools["delete_repo"].concerns["security"], "high");
    assert_eq!(config.auth.clients[0].concerns["security"], "high");
}

#[test]
fn every_undeclared_concern_and_unknown_value_is_named_with_its_path() {
    let text = format!(
        "{DECLARED}
[[upstream]]
name = \"a\"
command = \"a\"
concerns = {{ cost = \"huge\", speed = \"fast\" }}

[upstream.tools.t]
concerns = {{ security = \"top\" }}

[auth]
[[auth.clients]]
name = \"ci\"
api_key = \"ci-key-0123456789abcdef\"
concerns = {{ colour = \"red\" }}
"
    );
    let found = problems(&text);
    let expect = [
        "upstream[0].concerns.cost: `huge` is not a value of concern `cost` (one of: minimal, moderate)",
        "upstream[0].concerns.speed: concern `speed` is not declared in [[concerns]]",
        "upstream[0].tools.t.concerns.security: `top` is not a value of concern `security` (one of: high, medium, low)",
        "auth.clients[0].concerns.colour: concern `colour` is not declared in [[concerns]]",
    ];
    for e in expect {
        assert!(found.iter().any(|p| p == e), "missing {e:?} in {found:#?}");
    }
}

#[test]
fn bad_declarations_are_reported() {
    let text = r#"
[[concerns]]
name = "Security"
description = ""
values = ["high", "high", ""]
default = "max"

[[concerns]]
name = "Security"
description = "again"
values = []
"#;
    let found = problems(text);
    for e in [
        "concerns[0].name: `Security` must match [a-z0-9_-]+",
        "concerns[0].description: must not be empty",
        "concerns[0].values[1]: `high` is listed twice",
        "concerns[0].values[2]: must not be empty",
        "concerns[0].default: `max` is not one of this concern's values",
        "concerns[1].name: concern `Security` is already declared by concerns[0]",
        "concerns[1].values: must list at least one value",
    ] {
        assert!(found.iter().any(|p| p == e), "missing {e:?} in {found:#?}");
    }
    assert!(load_str("[[concerns]]\nname = \"x\"\ndescription = \"d\"\nvalues = [\"a\"]\ncolour = 1\n").is_err());
}
