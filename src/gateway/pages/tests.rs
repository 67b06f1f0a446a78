//! Unit tests of `pages` (pages.rs).

use super::*;
use serde_json::json;

fn items(n: usize) -> Vec<Value> {
    (0..n).map(|i| json!({"name": format!("t{i}")})).collect()
}

#[test]
fn pages_follow_their_cursors_to_the_end() {
    let pager = Pager::new(2);
    let all = items(5);
    let mut seen = Vec::new();
    let mut params: Option<Value> = None;
    loop {
        let page = pager.page("tools", "tools", &all, params.as_ref()).unwrap();
        seen.extend(page["tools"].as_array().unwrap().iter().cloned());
        match page.get("nextCursor") {
            Some(c) => params = Some(json!({"cursor": c})),
            None => break,
        }
    }
    assert_eq!(seen, all);
}

#[test]
fn forged_altered_or_foreign_cursors_are_refused() {
    let pager = Pager::new(2);
    let all = items(5);
    let page = pager.page("tools", "tools", &all, None).unwrap();
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    let other = Pager::new(2);
    assert!(other.page("tools", "tools", &all, Some(&json!({"cursor": cursor}))).is_err(), "another process's");
    assert!(pager.page("prompts", "prompts", &all, Some(&json!({"cursor": cursor}))).is_err(), "another list's");
    let (off, mac) = cursor.split_once('.').unwrap();
    let moved = format!("{:x}.{mac}", usize::from_str_radix(off, 16).unwrap() + 1);
    for bad in [json!("x"), json!(moved), json!(3), json!("")] {
        let e = pager.page("tools", "tools", &all, Some(&json!({"cursor": bad}))).unwrap_err();
        assert_eq!(e.code, -32602);
    }
    let whole = Pager::new(0);
    assert_eq!(whole.page("tools", "tools", &all, None).unwrap()["tools"].as_array().unwrap().len(), 5);
    assert!(whole.page("tools", "tools", &all, Some(&json!({"cursor": "1.0"}))).is_err());
}
