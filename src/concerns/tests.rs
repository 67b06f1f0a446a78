use proptest::prelude::*;
use serde_json::json;

use super::*;

fn concern(name: &str, values: &[&str], default: Option<&str>) -> ConcernConfig {
    ConcernConfig {
        name: name.into(),
        description: format!("the {name}"),
        values: values.iter().map(|v| (*v).to_owned()).collect(),
        default: default.map(str::to_owned),
    }
}

fn declared() -> Declared {
    Declared::new(&[
        concern("security", &["high", "medium", "low"], Some("medium")),
        concern("cost", &["minimal", "moderate"], None),
    ])
}

fn values(pairs: &[(&str, &str)]) -> ConcernValues {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[test]
fn the_proposals_example() {
    let d = declared();
    let encrypt = d.resolve(&[&values(&[("security", "high"), ("cost", "minimal")])], None);
    let log = d.resolve(&[&values(&[("security", "medium")])], None);
    let validate = d.resolve(&[], None);
    let host = d.configure(&json!({"security": "high", "cost": "minimal"})).expect("valid");
    assert!(host.filter().shows(&encrypt));
    assert!(!host.filter().shows(&log), "security mismatch");
    assert!(host.filter().shows(&validate), "unmapped primitives stay");
    // The update of the proposal: cost moderate.
    let updated = d.configure(&json!({"security": "high", "cost": "moderate"})).expect("valid");
    assert!(!updated.filter().shows(&encrypt));
    assert!(updated.filter().shows(&validate));
}

#[test]
fn layers_win_in_order_and_meta_fills_the_rest() {
    let d = declared();
    let tool = values(&[("security", "high")]);
    let upstream = values(&[("security", "low"), ("cost", "moderate")]);
    let meta = json!({"concerns": {"cost": "minimal", "security": "medium", "speed": "fast"}});
    let m = d.resolve(&[&tool, &upstream], Some(&meta));
    assert_eq!(d.values_of(&m), Some(json!({"security": "high", "cost": "moderate"}).as_object().cloned().unwrap()));
    let only_meta = d.resolve(&[], Some(&meta));
    assert_eq!(d.values_of(&only_meta).map(Value::Object), Some(json!({"security": "medium", "cost": "minimal"})));
    // A value the upstream made up is not one of ours: ignored.
    let odd = d.resolve(&[], Some(&json!({"concerns": {"security": "extreme"}})));
    assert_eq!(d.values_of(&odd), None);
}

#[test]
fn omitted_concerns_take_their_default_once_configured() {
    let d = declared();
    let low = d.resolve(&[&values(&[("security", "low")])], None);
    let medium = d.resolve(&[&values(&[("security", "medium")])], None);
    // Nothing configured: the client has no configuration at all (the
    // gateway shows everything); an empty one takes the defaults.
    let empty = d.configure(&json!({})).expect("valid");
    assert!(!empty.filter().shows(&low), "security defaults to medium");
    assert!(empty.filter().shows(&medium));
    let only_cost = d.configure(&json!({"cost": "minimal"})).expect("valid");
    assert!(!only_cost.filter().shows(&low));
    // cost has no default: not filtering unless configured.
    let cheap = d.resolve(&[&values(&[("cost", "moderate")])], None);
    assert!(empty.filter().shows(&cheap));
}

#[test]
fn bad_values_are_refused_naming_the_concern_and_unknown_names_are_ignored() {
    let d = declared();
    let e = d.configure(&json!({"security": "extreme"})).unwrap_err();
    let error = e.to_error_object();
    assert_eq!(error.code, -32602);
    assert!(error.message.contains("concern `security`"), "{error:?}");
    assert_eq!(d.configure(&json!(["high"])).unwrap_err(), ConcernError::NotAnObject);
    assert_eq!(d.configure(&json!({"security": 3})).unwrap_err(), ConcernError::NotAnObject);
    let c = d.configure(&json!({"colour": "red", "cost": "minimal"})).expect("unknown names are dropped");
    assert_eq!(c.values(), &values(&[("cost", "minimal")]));
}

#[test]
fn declarations_as_clients_see_them() {
    assert_eq!(
        declared().to_json(),
        json!([
            {"name": "security", "description": "the security", "values": ["high", "medium", "low"], "default": "medium"},
            {"name": "cost", "description": "the cost", "values": ["minimal", "moderate"]},
        ])
    );
    assert!(Declared::default().is_empty());
    assert_eq!(Declared::default().resolve(&[&values(&[("security", "high")])], None), Mapping::default());
}

/// Declarations of up to 3 concerns with up to 3 values, some with a default.
fn arb_declared() -> impl Strategy<Value = Vec<ConcernConfig>> {
    proptest::collection::vec((1usize..4, proptest::option::of(0usize..3)), 1..4).prop_map(|shape| {
        shape
            .into_iter()
            .enumerate()
            .map(|(i, (n, default))| {
                let values: Vec<String> = (0..n).map(|v| format!("v{v}")).collect();
                let default = default.filter(|d| *d < n).map(|d| values[d].clone());
                ConcernConfig { name: format!("c{i}"), description: "d".into(), values, default }
            })
            .collect()
    })
}

proptest! {
    /// The filtering rule, stated directly: shown iff every concern in
    /// effect (configured, else defaulted) matches where the primitive has
    /// a value.
    #[test]
    fn the_filtering_rule_holds(
        concerns in arb_declared(),
        mapped in proptest::collection::vec(proptest::option::of(0usize..3), 3),
        configured in proptest::collection::vec(proptest::option::of(0usize..3), 3),
    ) {
        let d = Declared::new(&concerns);
        let pick = |picks: &[Option<usize>]| -> ConcernValues {
            concerns.iter().zip(picks).filter_map(|(c, p)| {
                let v = c.values.get((*p)?)?;
                Some((c.name.clone(), v.clone()))
            }).collect()
        };
        let primitive = pick(&mapped);
        let client = pick(&configured);
        let mapping = d.resolve(&[&primitive], None);
        let configuration = d.configure(&serde_json::to_value(&client).unwrap()).unwrap();
        let expected = concerns.iter().all(|c| {
            let want = client.get(&c.name).or(c.default.as_ref());
            match (want, primitive.get(&c.name)) {
                (Some(w), Some(h)) => w == h,
                _ => true,
            }
        });
        prop_assert_eq!(configuration.filter().shows(&mapping), expected);
        // An unmapped primitive is always shown.
        prop_assert!(configuration.filter().shows(&d.resolve(&[], None)));
    }

    /// Configuring one more concern (one without a default, which would
    /// filter already) never shows more.
    #[test]
    fn configuring_more_never_shows_more(
        concerns in arb_declared(),
        mapped in proptest::collection::vec(proptest::option::of(0usize..3), 3),
        extra in 0usize..3,
        value in 0usize..3,
    ) {
        let d = Declared::new(&concerns);
        let primitive: ConcernValues = concerns.iter().zip(&mapped).filter_map(|(c, p)| {
            Some((c.name.clone(), c.values.get((*p)?)?.clone()))
        }).collect();
        let mapping = d.resolve(&[&primitive], None);
        let before = d.configure(&json!({})).unwrap();
        if let Some(c) = concerns.get(extra).filter(|c| c.default.is_none())
            && let Some(v) = c.values.get(value)
        {
            let after = d.configure(&json!({ c.name.clone(): v })).unwrap();
            prop_assert!(!after.filter().shows(&mapping) || before.filter().shows(&mapping));
        }
    }
}
