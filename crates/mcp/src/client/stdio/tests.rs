//! Unit tests of `stdio.rs`.

use super::*;

#[test]
fn lines_that_are_not_json_rpc_are_skipped() {
    assert_eq!(decode_line("", "t").count(), 0);
    assert_eq!(decode_line("Server started on stdio", "t").count(), 0);
    assert_eq!(decode_line(r#"{"jsonrpc":"2.0","method":"x"}"#, "t").count(), 1);
    let batch = r#"[{"jsonrpc":"2.0","method":"a"},{"bad":1},{"jsonrpc":"2.0","id":1,"result":{}}]"#;
    assert_eq!(decode_line(batch, "t").count(), 2);
}

/// Records each write it is given, whole.
#[derive(Default)]
struct Writes(Vec<Vec<u8>>);

impl AsyncWrite for Writes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.get_mut().0.push(buf.to_vec());
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

async fn written(bursts: Vec<Vec<Bytes>>) -> Vec<Vec<u8>> {
    let mut out = Writes::default();
    for burst in bursts {
        let (tx, rx) = mpsc::channel(QUEUE);
        for line in burst {
            tx.send(line).await.expect("queued");
        }
        drop(tx);
        write_lines(&mut out, rx).await.expect("written");
    }
    out.0
}

#[tokio::test]
async fn lines_queued_together_leave_in_one_write_and_a_long_one_alone() {
    let line = |s: &str| Bytes::from(format!("{s}\n"));
    let long = Bytes::from(vec![b'x'; JOIN + 1]);
    let writes =
        written(vec![vec![line("a")], vec![line("b"), line("c"), long.clone(), line("d")], vec![line("e"), line("f")]])
            .await;
    assert_eq!(writes, vec![b"a\n".to_vec(), b"b\nc\n".to_vec(), long.to_vec(), b"d\n".to_vec(), b"e\nf\n".to_vec()]);
}

#[tokio::test]
async fn joined_writes_stay_within_the_join_limit() {
    let half = Bytes::from(vec![b'y'; JOIN / 2 + 1]);
    let writes = written(vec![vec![half.clone(), half.clone(), half.clone()]]).await;
    assert_eq!(writes.len(), 3, "two halves over the limit are not joined");
    assert!(writes.iter().all(|w| w.len() <= JOIN));
    assert_eq!(writes.concat(), [half.clone(), half.clone(), half].concat());
}
