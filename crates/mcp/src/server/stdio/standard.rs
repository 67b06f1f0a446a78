//! The process's own stdin and stdout as async streams.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on the blocking
//! thread pool: each line costs a hand-off to a pool thread and a wake-up
//! back, which profiles showed to be most of a stdio server's CPU per call.
//! When stdin or stdout is a pipe or a socket (what a client that launches
//! its server gives it), it is driven by the reactor like any other socket
//! instead; files and terminals, which cannot be polled, keep the pool.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// What a standard stream is, for choosing how to drive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Fifo,
    Socket,
    /// A file, a terminal or anything else epoll cannot wait on.
    Other,
}

/// A duplicate of `fd` (so the process's own descriptor stays open) and
/// what it is, with its (device, inode) to tell whether two streams share
/// one pipe.
fn inspect(fd: impl AsFd) -> io::Result<(OwnedFd, Kind, (u64, u64))> {
    let owned = fd.as_fd().try_clone_to_owned()?;
    let file = File::from(owned);
    let meta = file.metadata()?;
    let kind = match meta.file_type() {
        t if t.is_fifo() => Kind::Fifo,
        t if t.is_socket() => Kind::Socket,
        _ => Kind::Other,
    };
    Ok((OwnedFd::from(file), kind, (meta.dev(), meta.ino())))
}

fn socket(fd: OwnedFd) -> io::Result<UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    UnixStream::from_std(std)
}

/// The process's stdin.
pub enum Reader {
    Pipe(pipe::Receiver),
    Socket(UnixStream),
    Blocking(tokio::io::Stdin),
}

/// The process's stdout.
pub enum Writer {
    Pipe(pipe::Sender),
    Socket(UnixStream),
    Blocking(tokio::io::Stdout),
}

/// stdin and stdout, each driven by the reactor when it is a pipe or a
/// socket. Must be called within a tokio runtime.
///
/// Making a stream non-blocking changes its open file for every process
/// that shares it, so stdout keeps the blocking pool when stderr is the
/// same pipe: the process's logs are written with plain blocking writes.
pub fn streams() -> (Reader, Writer) {
    (
        reader().unwrap_or_else(|_| Reader::Blocking(tokio::io::stdin())),
        writer().unwrap_or_else(|_| Writer::Blocking(tokio::io::stdout())),
    )
}

fn reader() -> io::Result<Reader> {
    let (fd, kind, _) = inspect(io::stdin())?;
    Ok(match kind {
        Kind::Fifo => Reader::Pipe(pipe::Receiver::from_owned_fd(fd)?),
        Kind::Socket => Reader::Socket(socket(fd)?),
        Kind::Other => Reader::Blocking(tokio::io::stdin()),
    })
}

fn writer() -> io::Result<Writer> {
    let (fd, kind, id) = inspect(io::stdout())?;
    let shared_with_stderr = inspect(io::stderr()).is_ok_and(|(_, _, err)| err == id);
    Ok(match kind {
        _ if shared_with_stderr => Writer::Blocking(tokio::io::stdout()),
        Kind::Fifo => Writer::Pipe(pipe::Sender::from_owned_fd(fd)?),
        Kind::Socket => Writer::Socket(socket(fd)?),
        Kind::Other => Writer::Blocking(tokio::io::stdout()),
    })
}

impl AsyncRead for Reader {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Reader::Pipe(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Socket(r) => Pin::new(r).poll_read(cx, buf),
            Reader::Blocking(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Writer {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Writer::Pipe(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Socket(w) => Pin::new(w).poll_write(cx, buf),
            Writer::Blocking(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Pipe(w) => Pin::new(w).poll_flush(cx),
            Writer::Socket(w) => Pin::new(w).poll_flush(cx),
            Writer::Blocking(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Writer::Pipe(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Socket(w) => Pin::new(w).poll_shutdown(cx),
            Writer::Blocking(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests;
