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
