use std::collections::HashMap;

use figment::Figment;
use figment::providers::{Format, Toml};
use proptest::prelude::*;

use super::{EXE_VAR, ExpandError, expand_str, expand_tree, process_env};

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Result<Option<String>, ExpandError> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| Ok(map.get(name).cloned())
}

fn expand(input: &str, pairs: &[(&str, &str)]) -> Result<String, Vec<ExpandError>> {
    expand_str(input, &vars(pairs))
}

#[test]
fn replaces_references() {
    let env = [("A", "one"), ("B_2", "two"), ("EMPTY", "")];
    assert_eq!(expand("${A}", &env).unwrap(), "one");
    assert_eq!(expand("x${A}y${B_2}z", &env).unwrap(), "xoneytwoz");
    assert_eq!(expand("Bearer ${A}", &env).unwrap(), "Bearer one");
    assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
    assert_eq!(expand("no references", &env).unwrap(), "no references");
}

#[test]
fn defaults_apply_when_unset_or_empty() {
    let env = [("SET", "value"), ("EMPTY", "")];
    assert_eq!(expand("${SET:-d}", &env).unwrap(), "value");
    assert_eq!(expand("${UNSET:-d}", &env).unwrap(), "d");
    assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
    assert_eq!(expand("${UNSET:-}", &env).unwrap(), "");
    assert_eq!(expand("${UNSET:-a:-b c/d}", &env).unwrap(), "a:-b c/d");
}

#[test]
fn dollar_escapes_and_lone_dollars() {
    let env = [("A", "one")];
    assert_eq!(expand("$${A}", &env).unwrap(), "${A}");
    assert_eq!(expand("$$${A}", &env).unwrap(), "$${A}");
    assert_eq!(expand("$$A $HOME $ 5$", &env).unwrap(), "$$A $HOME $ 5$");
    assert_eq!(expand("cost: $${A} is ${A}", &env).unwrap(), "cost: ${A} is one");
}

#[test]
fn reports_every_failing_reference() {
    let errors = expand("${A}:${B}:${C:-ok}:${}", &[]).unwrap_err();
    assert_eq!(
        errors,
        vec![ExpandError::Unset("A".into()), ExpandError::Unset("B".into()), ExpandError::BadReference(String::new())]
    );
}

#[test]
fn rejects_malformed_references() {
    for input in ["${1A}", "${A B}", "${A:?x}", "${A-x}", "${A:-${B}}", "${é}"] {
        let errors = expand(input, &[("A", "x"), ("B", "y")]).unwrap_err();
        assert!(matches!(errors.as_slice(), [ExpandError::BadReference(_)]), "{input}: {errors:?}");
    }
    assert_eq!(expand("abc ${A", &[("A", "x")]).unwrap_err(), vec![ExpandError::Unterminated]);
}

#[test]
fn messages_name_the_variable() {
    assert_eq!(ExpandError::Unset("TIME_TOKEN".into()).to_string(), "environment variable TIME_TOKEN is not set");
    assert_eq!(
        ExpandError::BadReference("A:?x".into()).to_string(),
        "invalid reference `${A:?x}`: expected `${NAME}` or `${NAME:-default}` (write `$${` for a literal `${`)"
    );
}

#[test]
fn tree_expansion_reports_toml_paths() {
    let mut value = Figment::from(Toml::string(
        r#"
        [server]
        path = "${MISSING_PATH}"
        [[upstream]]
        name = "a"
        args = ["--token", "${TOKEN}", "${MISSING_ARG}"]
        [[upstream]]
        name = "b"
        headers = { Authorization = "Bearer ${TIME_TOKEN}", "X-Key" = "${TOKEN}" }
        [upstream.tools."read.file"]
        examples = [{ cmd = "echo $${HOME}" }]
        "#,
    ))
    .find_value("")
    .unwrap();
    let problems = expand_tree(&mut value, &vars(&[("TOKEN", "secret")]));
    let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        shown,
        [
            "server.path: environment variable MISSING_PATH is not set",
            "upstream[0].args[2]: environment variable MISSING_ARG is not set",
            "upstream[1].headers.Authorization: environment variable TIME_TOKEN is not set",
        ]
    );
    assert_eq!(
        value.find_ref("upstream").unwrap().as_array().unwrap()[0].as_dict().unwrap()["args"].as_array().unwrap()[1]
            .as_str(),
        Some("secret")
    );
    let b = value.find_ref("upstream").unwrap().as_array().unwrap()[1].as_dict().unwrap();
    assert_eq!(b["headers"].as_dict().unwrap()["X-Key"].as_str(), Some("secret"));
    let example = &b["tools"].as_dict().unwrap()["read.file"].as_dict().unwrap()["examples"].as_array().unwrap()[0];
    assert_eq!(example.as_dict().unwrap()["cmd"].as_str(), Some("echo ${HOME}"));
}

#[test]
#[allow(clippy::result_large_err, reason = "figment's Jail API returns figment::Error")]
fn toolgate_exe_prefers_the_environment() {
    figment::Jail::expect_with(|jail| {
        jail.set_env(EXE_VAR, "/opt/toolgate/bin/toolgate");
        assert_eq!(process_env(EXE_VAR).unwrap().as_deref(), Some("/opt/toolgate/bin/toolgate"));
        Ok(())
    });
}

#[test]
#[allow(clippy::result_large_err, reason = "figment's Jail API returns figment::Error")]
fn toolgate_exe_falls_back_to_the_running_executable() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let exe = std::env::current_exe().unwrap();
        assert_eq!(process_env(EXE_VAR).unwrap(), Some(exe.to_str().unwrap().to_owned()));
        assert_eq!(process_env("TOOLGATE_SURELY_UNSET").unwrap(), None);
        Ok(())
    });
}

/// Escapes every `${` in `s` so that it expands back to `s`.
fn escape(s: &str) -> String {
    s.replace("${", "$${")
}

proptest! {
    #[test]
    fn escaped_text_expands_to_itself(s in "[a-z${}:\\-\u{e9} ]{0,40}") {
        // No variable is set: any reference that survived escaping would fail.
        prop_assert_eq!(expand(&escape(&s), &[]), Ok(s));
    }

    #[test]
    fn never_panics_and_only_references_change(s in "\\PC{0,60}") {
        let result = expand(&s, &[("A", "x")]);
        if !s.contains("${") {
            prop_assert_eq!(result, Ok(s));
        }
    }
}
