//! The rendered-answer cache is bounded by what its answers weigh in bytes,
//! not by how many there are: many distinct large answers (distinct URIs)
//! cannot grow it past `disclosure.cache_bytes`.

use std::sync::Arc;

use serde_json::value::RawValue;

use super::{Disclosure, Pager, Rendered};

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
    let layer = Disclosure::new(CACHE, Arc::new(Pager::new(0)));
    // 200 distinct answers of 16 KiB: 3.2 MiB offered, 256 KiB kept.
    for i in 0..200 {
        let uri = format!("resource:///tool_descriptions?tools=t{i}");
        layer.rendered.insert((1, uri), rendered(16 * 1024, 8));
        layer.rendered.run_pending_tasks();
        assert!(layer.rendered.weighted_size() <= CACHE, "{} bytes after {i}", layer.rendered.weighted_size());
    }
    // It does keep answers (a cache, not a no-op), each weighed at least
    // by its size.
    let kept = layer.rendered.entry_count();
    assert!(kept > 0, "nothing kept");
    assert!(kept <= CACHE / (16 * 1024), "{kept} answers of 16 KiB kept in {CACHE} bytes");
    assert!(layer.rendered.weighted_size() >= kept * 16 * 1024, "weighed below their size");
    // A long URI is weighed too: 64 answers of a few bytes with 4 KiB keys
    // fit within the bound as well.
    let small = Disclosure::new(64 * 1024, Arc::new(Pager::new(0)));
    for i in 0..64 {
        let uri = format!("resource:///tool_descriptions?tools={i}{}", ",y".repeat(2000));
        small.rendered.insert((1, uri), rendered(8, 1));
    }
    small.rendered.run_pending_tasks();
    assert!(small.rendered.weighted_size() <= 64 * 1024, "{}", small.rendered.weighted_size());
    assert!(small.rendered.entry_count() < 64, "long keys are not weighed");
}
