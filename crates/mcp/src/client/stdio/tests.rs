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

/// A pipe that records each write it is given, whole, while it has `room`
/// for it, and then reports itself full. Clones share the record (the pipe
/// owns the writer).
#[derive(Clone)]
struct Writes {
    taken: Arc<Mutex<Vec<Vec<u8>>>>,
    room: usize,
}

impl Writes {
    fn with_room(room: usize) -> Self {
        Writes { taken: Arc::default(), room }
    }

    fn unbounded() -> Self {
        Self::with_room(usize::MAX)
    }

    fn taken(&self) -> Vec<Vec<u8>> {
        self.taken.lock().clone()
    }
}

impl AsyncWrite for Writes {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if buf.len() > this.room {
            return std::task::Poll::Pending;
        }
        this.room -= buf.len();
        this.taken.lock().push(buf.to_vec());
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
    let out = Writes::unbounded();
    for burst in bursts {
        let pipe = Pipe::new(out.clone());
        let (tx, rx) = mpsc::channel(QUEUE);
        for line in burst {
            tx.send(line).await.expect("queued");
        }
        drop(tx);
        write_lines(&pipe, rx).await.expect("written");
        assert!(pipe.stdin.lock().await.is_none(), "stdin closes with the queue");
    }
    out.taken()
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

#[tokio::test]
async fn a_short_line_is_written_by_its_caller_only_when_nothing_waits_before_it() {
    let taken = Writes::with_room(8);
    let pipe = Pipe::new(taken.clone());
    assert_eq!(pipe.try_write(b"one\n".to_vec()), Ok(()), "room, nothing queued: written at once");
    assert_eq!(pipe.try_write(b"three\n".to_vec()), Err(b"three\n".to_vec()), "no room: handed back whole");
    // A line counted as queued keeps later ones behind it.
    let queued = Queued::new(&pipe);
    assert_eq!(pipe.try_write(b"x\n".to_vec()), Err(b"x\n".to_vec()), "a line is queued: handed back");
    // A send given up uncounts its line.
    drop(queued);
    assert_eq!(pipe.try_write(b"x\n".to_vec()), Ok(()));
    // Someone writing holds the pipe.
    let held = pipe.stdin.lock().await;
    assert_eq!(pipe.try_write(b"y\n".to_vec()), Err(b"y\n".to_vec()), "the pipe is held: handed back");
    drop(held);
    let long = vec![b'z'; PIPE_BUF + 1];
    let roomy = Pipe::new(Writes::unbounded());
    assert_eq!(roomy.try_write(long.clone()), Err(long), "longer than an atomic pipe write: queued");
    assert_eq!(taken.taken(), vec![b"one\n".to_vec(), b"x\n".to_vec()]);
}
