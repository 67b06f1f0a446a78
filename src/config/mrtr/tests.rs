use super::*;

#[test]
fn defaults_are_valid_and_documented_values() {
    let d = MrtrConfig::default();
    assert_eq!(d.hold_timeout, Duration::from_secs(600));
    assert_eq!((d.max_held_per_client, d.max_held), (16, 1000));
    assert!(check(&d).is_empty());
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let bad = MrtrConfig {
        hold_timeout: Duration::ZERO,
        max_held_per_client: 0,
        max_held: 0,
        key: Some(Secret::new("short-secret-value")),
    };
    let problems = check(&bad);
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["mrtr.hold_timeout", "mrtr.max_held_per_client", "mrtr.max_held", "mrtr.key"]);
    assert!(!problems[3].message.contains("short-secret-value"), "the key is never echoed: {}", problems[3].message);
}

#[test]
fn the_section_parses_and_refuses_unknown_keys() {
    let config = crate::config::load_str("[mrtr]\nhold_timeout = \"2s\"\nmax_held = 5\n").expect("valid");
    assert_eq!(config.mrtr.hold_timeout, Duration::from_secs(2));
    assert_eq!(config.mrtr.max_held, 5);
    assert_eq!(config.mrtr.max_held_per_client, 16);
    assert!(crate::config::load_str("[mrtr]\nhold = \"2s\"\n").is_err());
}

#[test]
fn the_key_is_expanded_and_never_printed() {
    let config = crate::config::load::in_jail(|jail| {
        jail.set_env("TOOLGATE_MRTR_KEY", "k".repeat(40));
        crate::config::load_str("[mrtr]\nkey = \"${TOOLGATE_MRTR_KEY}\"\n")
    })
    .expect("valid");
    let key = config.mrtr.key.as_ref().expect("set");
    assert_eq!(key.expose(), "k".repeat(40));
    assert!(!format!("{:?}", config.mrtr).contains("kkkk"));
    assert!(!serde_json::to_string(&config.mrtr).unwrap_or_default().contains("kkkk"));
}
