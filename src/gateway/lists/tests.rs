//! Unit tests of `lists` (lists.rs).

use super::template_matches;

#[test]
fn templates_match_their_expansions() {
    assert!(template_matches("test://template/{id}/data", "test://template/42/data"));
    assert!(!template_matches("test://template/{id}/data", "test://template/42/other"));
    assert!(!template_matches("test://template/{id}/data", "file://template/42/data"));
    assert!(template_matches("notes://{name}", "notes://todo"));
    assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
    assert!(template_matches("resource:///tool_descriptions?tools={tools}", "resource:///tool_descriptions?tools=a,b"));
    assert!(template_matches("static://x", "static://x"));
    assert!(!template_matches("static://x", "static://y"));
}
