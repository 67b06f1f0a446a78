//! Unit tests of `bm25f.rs`.

use super::*;

fn doc(name: &str, description: &str) -> [String; 5] {
    [name.into(), "srv".into(), String::new(), description.into(), String::new()]
}

fn scores(index: &Bm25f, n: usize, query: &str) -> Vec<f32> {
    let mut s = vec![0.0; n];
    index.accumulate(&index.query_terms(query), &mut s);
    s
}

#[test]
fn matches_the_formula() {
    let docs = [doc("get_issue", "Get an issue by key"), doc("list_pages", "List the pages of a space")];
    let index = Bm25f::build(&docs);
    let s = scores(&index, 2, "issue issues");
    // "issu": only in tool 0, once in its name (2 terms, as the average)
    // and once in its description (3 terms, as the average)
    let (name, description) = (FIELDS[0], FIELDS[3]);
    let tilde = name.1 * 1.0 / (1.0 - name.2 + name.2 * 2.0 / 2.0)
        + description.1 * 1.0 / (1.0 - description.2 + description.2 * 3.0 / 3.0);
    let idf = (1.0f64 + (2.0 - 1.0 + 0.5) / (1.0 + 0.5)).ln();
    let want = idf * tilde * (K1 + 1.0) / (K1 + tilde);
    assert!((f64::from(s[0]) - want).abs() < 1e-5, "{} vs {want}", s[0]);
    assert_eq!(s[1], 0.0);
    // a term every tool has still counts a little (idf > 0); unknown terms nothing
    assert!(scores(&index, 2, "srv")[1] > 0.0);
    assert_eq!(scores(&index, 2, "zebra the"), [0.0, 0.0]);
}

#[test]
fn empty_catalog() {
    let index = Bm25f::build(&[]);
    assert!(index.query_terms("anything").is_empty());
}
