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
    let bad = MrtrConfig { hold_timeout: Duration::ZERO, max_held_per_client: 0, max_held: 0 };
    let paths: Vec<String> = check(&bad).into_iter().map(|p| p.path).collect();
    assert_eq!(paths, ["mrtr.hold_timeout", "mrtr.max_held_per_client", "mrtr.max_held"]);
}

#[test]
fn the_section_parses_and_refuses_unknown_keys() {
    let config = crate::config::load_str("[mrtr]\nhold_timeout = \"2s\"\nmax_held = 5\n").expect("valid");
    assert_eq!(config.mrtr.hold_timeout, Duration::from_secs(2));
    assert_eq!(config.mrtr.max_held, 5);
    assert_eq!(config.mrtr.max_held_per_client, 16);
    assert!(crate::config::load_str("[mrtr]\nhold = \"2s\"\n").is_err());
}
