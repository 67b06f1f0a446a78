//! The rendered-answer cache is bounded by what its answers weigh in bytes,
//! not by how many there are: many distinct large answers (distinct URIs)
//! cannot grow it past `disclosure.cache_bytes`.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::{Rendered, rendered_cache};

/// A rendered answer of about `bytes` bytes authorizing `tools` names.
fn rendered(bytes: usize, tools: usize) -> Arc<Rendered> {
    let text = format!("{{\"contents\":[{{\"text\":\"{}\"}}]}}", "x".repeat(bytes));
    let result: Arc<RawValue> = RawValue::from_string(text).expect("JSON").into();
    let authorized = (0..tools).map(|i| (format!("tool_{i}"), i as u64)).collect();
    Arc::new(Rendered { result, authorized })
}

#[test]
fn the_cache_holds_at_most_cache_bytes_of_answers() {
    const CACHE: u64 = 256 * 1024;
    let rendered_answers = rendered_cache(CACHE);
    // 200 distinct answers of 16 KiB: 3.2 MiB offered, 256 KiB kept.
    for i in 0..200 {
        let uri = format!("resource:///tool_descriptions?tools=t{i}");
        rendered_answers.insert((1, uri), rendered(16 * 1024, 8));
        rendered_answers.run_pending_tasks();
        assert!(rendered_answers.weighted_size() <= CACHE, "{} bytes after {i}", rendered_answers.weighted_size());
    }
    // It does keep answers (a cache, not a no-op), each weighed at least
    // by its size.
    let kept = rendered_answers.entry_count();
    assert!(kept > 0, "nothing kept");
    assert!(kept <= CACHE / (16 * 1024), "{kept} answers of 16 KiB kept in {CACHE} bytes");
    assert!(rendered_answers.weighted_size() >= kept * 16 * 1024, "weighed below their size");
    // A long URI is weighed too: 64 answers of a few bytes with 4 KiB keys
    // fit within the bound as well.
    let small = rendered_cache(64 * 1024);
    for i in 0..64 {
        let uri = format!("resource:///tool_descriptions?tools={i}{}", ",y".repeat(2000));
        small.insert((1, uri), rendered(8, 1));
    }
    small.run_pending_tasks();
    assert!(small.weighted_size() <= 64 * 1024, "{}", small.weighted_size());
    assert!(small.entry_count() < 64, "long keys are not weighed");
}
