use futures::StreamExt as _;

use super::*;

fn chunks(parts: &[&str]) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin {
    futures::stream::iter(parts.iter().map(|p| Ok(Bytes::copy_from_slice(p.as_bytes()))).collect::<Vec<_>>())
}

async fn outcome(parts: &[&str], limit: usize) -> Result<String, String> {
    let mut capped = CappedEvents::new(chunks(parts), limit);
    let mut got = String::new();
    while let Some(item) = capped.next().await {
        match item {
            Ok(b) => got.push_str(std::str::from_utf8(&b).unwrap()),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(got)
}

#[tokio::test]
async fn events_within_the_limit_pass_whatever_their_line_endings() {
    let stream = ["data: 0123456789\n\n", "data: 0123\r\n\r\ndata: 45", "6789\r\r", "data: x\n\n"];
    assert_eq!(outcome(&stream, 16).await.unwrap(), stream.concat());
    // Many events: only each one counts, not the stream.
    let many: Vec<&str> = std::iter::repeat_n("data: 0123456789\n\n", 1000).collect();
    assert!(outcome(&many, 16).await.is_ok());
}

#[tokio::test]
async fn an_event_over_the_limit_ends_the_stream_even_split_over_chunks_and_lines() {
    let err = outcome(&["data: 0123456789", "0123456789\n\n"], 16).await.unwrap_err();
    assert!(err.contains("longer than 16 bytes"), "{err}");
    // Several lines of one event add up.
    assert!(outcome(&["data: 01234\ndata: 56789\ndata: x\n\n"], 16).await.is_err());
    // A `\r\n` split over chunks is one line end, not a blank line.
    assert!(outcome(&["data: 0123456\r", "\ndata: 789012\n\n"], 16).await.is_err());
}

/// A stream of `events` (each a list of lines), every line ended by `eol`,
/// every event by a blank line.
fn sse_text(events: &[Vec<String>], eol: &str) -> String {
    events.iter().map(|lines| lines.iter().map(|l| format!("{l}{eol}")).collect::<String>() + eol).collect()
}

/// `text` cut at the given (sorted, deduplicated) byte offsets.
fn cut(text: &str, mut at: Vec<usize>) -> Vec<String> {
    at.retain(|&i| i > 0 && i < text.len());
    at.sort_unstable();
    at.dedup();
    let mut parts = Vec::new();
    let mut from = 0;
    for i in at.into_iter().chain([text.len()]) {
        parts.push(text[from..i].to_owned());
        from = i;
    }
    parts
}

proptest::proptest! {
    /// However an upstream's stream is cut into chunks and whatever its line
    /// ends, the bytes pass unchanged while every event is within the limit,
    /// and the stream fails exactly when one event (its bytes without line
    /// ends) is over it.
    #[test]
    fn any_chunking_passes_events_within_the_limit_and_fails_past_it(
        events in proptest::collection::vec(
            proptest::collection::vec("[ -~]{1,12}", 1..4),
            1..8,
        ),
        eol in proptest::sample::select(vec!["\n", "\r\n", "\r"]),
        cuts in proptest::collection::vec(0usize..400, 0..12),
        limit in 1usize..40,
    ) {
        let text = sse_text(&events, eol);
        let parts = cut(&text, cuts);
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let got = runtime.block_on(outcome(&refs, limit));
        let largest = events.iter().map(|lines| lines.iter().map(String::len).sum::<usize>()).max().unwrap_or(0);
        if largest > limit {
            proptest::prop_assert!(got.is_err(), "an event of {largest} bytes passed a limit of {limit}");
        } else {
            proptest::prop_assert_eq!(got, Ok(text));
        }
    }
}
