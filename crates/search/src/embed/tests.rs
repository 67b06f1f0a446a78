//! Unit tests of `embed.rs`.

use super::*;

#[test]
fn wordpiece_without_special_tokens() {
    let m = model();
    let vocab = m.tokenizer.get_vocab(true);
    let ids = m.ids("getUserData, please!");
    let want: Vec<u32> = ["get", "user", "data", "please"].iter().map(|w| vocab[*w]).collect();
    assert_eq!(ids, want);
    assert_eq!(m.ids(&"word ".repeat(400)).len(), MAX_TOKENS);
    assert!(m.ids("!!! ---").is_empty());
}

#[test]
fn cached_ids_are_the_same() {
    let m = model();
    let mut cache = HashMap::new();
    for text in [
        "getUserData, please! unaffable tokenization",
        "Ünïcödé 東京都 naïve café, Ǆemal ＡＢＣ",
        &"repeat words ".repeat(200),
        "",
    ] {
        assert_eq!(m.ids_cached(text, &mut cache), m.ids(text), "{text}");
    }
}

#[test]
fn vectors_are_unit_or_zero() {
    let m = model();
    let v = m.embed("create a pull request");
    assert!((dot(&v, &v) - 1.0).abs() < 1e-5);
    assert!(m.embed("").iter().all(|&x| x == 0.0));
    // related texts are closer than unrelated ones
    let close = dot(&v, &m.embed("open a merge request"));
    let far = dot(&v, &m.embed("current time in Tokyo"));
    assert!(close > far, "{close} vs {far}");
}

#[test]
fn dot_product() {
    let a: Vec<f32> = (0..DIMS).map(|i| i as f32).collect();
    let b = vec![2.0f32; DIMS];
    assert_eq!(dot(&a, &b), (0..DIMS).map(|i| 2.0 * i as f32).sum::<f32>());
}
