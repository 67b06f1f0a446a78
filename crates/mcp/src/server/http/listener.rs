//! The HTTP listener: accepts connections, serves each with hyper (HTTP/1.1
//! or HTTP/2, `TCP_NODELAY` set), and closes the ones that hold a place
//! without using it:
//!
//! - a request head must arrive in full within `header_read_timeout` of its
//!   first byte (or of the connection's opening, for the first request): a
//!   client sending half a header is cut off;
//! - a connection with no request in progress is closed after
//!   `keep_alive_timeout` (HTTP/1 keep-alive, HTTP/2 with no stream open);
//! - a body must arrive within `body_read_timeout` (checked where bodies are
//!   read, see `body.rs`);
//! - at `max_connections`, or at a peer's `max_connections_per_peer`, the
//!   longest-idle connection gives its place to the new one, and a peer
//!   refused again and again is told to go (see `places.rs`).
//!
//! `axum::serve` exposes none of these, so connections are served with
//! hyper-util's connection builder directly. A watch on each connection's
//! socket (bytes read) and on its requests (started, and finished when their
//! response body is) tells which state it is in.
//!
//! [`Server::shutdown`] stops accepting and asks every connection to finish
//! gracefully: requests in progress complete, idle connections close.

use std::convert::Infallible;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::App;
use super::reply::ReplyBody;

mod peer;
mod places;
mod repoll;
mod woken;

pub use peer::{BadNetwork, TrustedProxies, parse_network};
pub use places::{REFUSAL_WINDOW, REFUSALS_BEFORE_CLOSE};

use places::{Full, Places};

/// Default most connections open at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Default time a request head may take.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time an idle connection is kept.
pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(30);

/// The HTTP/2 connection preface, which tells an HTTP/2 connection apart.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0";
/// Pause after an accept error (e.g. out of file descriptors).
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Limits of the listener itself.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// Most connections open at once. One more takes the place of the
    /// longest-idle one, or, when every one is busy, is closed as soon as
    /// it is accepted.
    pub max_connections: usize,
    /// Most connections of one peer (its address, or the client address a
    /// trusted proxy forwards), under the same rule; `0` for no cap.
    pub max_connections_per_peer: usize,
    /// Proxies trusted to forward their client's address.
    pub trusted_proxies: TrustedProxies,
    /// How long a request head may take, from its first byte (or from the
    /// connection's opening, for the first request).
    pub header_read_timeout: Duration,
    /// How long a connection with no request in progress is kept open.
    pub keep_alive_timeout: Duration,
}

impl Default for ListenOptions {
    fn default() -> Self {
        Self {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: 0,
            trusted_proxies: TrustedProxies::default(),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            keep_alive_timeout: DEFAULT_KEEP_ALIVE_TIMEOUT,
        }
    }
}

/// A running listener.
pub struct Server {
    stop: CancellationToken,
    connections: TaskTracker,
    places: Arc<Places>,
}

impl Server {
    /// Accepts connections on `listener` and serves `app` (an [`App`], or a
    /// router) on each, until [`Server::shutdown`].
    pub fn start(listener: TcpListener, app: impl Into<App>, options: ListenOptions) -> Server {
        let app = app.into();
        let stop = CancellationToken::new();
        let connections = TaskTracker::new();
        let places = Arc::new(Places::new(options.max_connections, options.max_connections_per_peer));
        let server = Server { stop: stop.clone(), connections: connections.clone(), places: places.clone() };
        crate::spawn(accept(listener, app, Arc::new(options), places, stop, connections));
        server
    }

    /// Stops accepting, and asks every connection to close once its
    /// requests in progress are answered.
    pub fn shutdown(&self) {
        self.stop.cancel();
        self.places.close_all();
        self.connections.close();
    }

    /// Waits until every connection is closed, or `within` passes. Returns
    /// whether they all are.
    pub async fn wait(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.connections.wait()).await.is_ok()
    }

    /// How many connections are open.
    pub fn connections(&self) -> usize {
        self.places.open()
    }
}

async fn accept(
    listener: TcpListener,
    app: App,
    options: Arc<ListenOptions>,
    places: Arc<Places>,
    stop: CancellationToken,
    connections: TaskTracker,
) {
    let mut refused: u64 = 0;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => return,
        };
        let (tcp, peer) = match accepted {
            Ok((tcp, addr)) => (tcp, peer::canonical(addr.ip())),
            Err(e) => {
                // Out of file descriptors, a connection reset before it was
                // accepted: pause rather than spin.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        let proxied = options.trusted_proxies.trusts(peer);
        let activity = Arc::new(Activity::new());
        let id = match places.admit(peer, !proxied, &activity) {
            Ok(id) => id,
            Err(full) => {
                refused += 1;
                if refused.is_power_of_two() {
                    let (cap, limit) = match full {
                        Full::Total => ("max_connections", options.max_connections),
                        Full::Peer => ("max_connections_per_peer", options.max_connections_per_peer),
                    };
                    tracing::warn!(cap, limit, %peer, refused, "connection refused: too many open, each busy");
                }
                drop(tcp);
                continue;
            }
        };
        let place = Place { places: places.clone(), id, peer, proxied };
        // An SSE answer is several small writes (the priming event, then the
        // response); with Nagle's algorithm the second one waits for the
        // client's delayed ACK, which costs 40 ms per streamed answer.
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY on a connection");
        }
        let (app, options) = (app.clone(), options.clone());
        // A connection's task, outside any request; tracked so that
        // shutdown can close and wait for every connection.
        #[allow(clippy::disallowed_methods)]
        connections.spawn(repoll::Repoll::new(async move {
            serve_connection(tcp, app, &options, activity, place).await;
        }));
    }
}

/// A connection's place among the open ones; freed when it is dropped.
struct Place {
    places: Arc<Places>,
    id: u64,
    /// The address the connection comes from.
    peer: IpAddr,
    /// Whether `peer` is a trusted proxy.
    proxied: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        self.places.release(self.id);
    }
}

/// Serves one connection until it ends, is found idle or stuck, gives its
/// place to another, or finishes gracefully once asked (the server's
/// shutdown, or refusals, see `places.rs`).
async fn serve_connection(
    tcp: TcpStream,
    app: App,
    options: &Arc<ListenOptions>,
    activity: Arc<Activity>,
    place: Place,
) {
    let io = TokioIo::new(Watched { inner: tcp, activity: activity.clone() });
    let watch = activity.clone();
    let place = Arc::new(place);
    let trusted = options.clone();
    let spare = Arc::new(woken::Spare::default());
    let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
        let active = Active::begin(&watch);
        let h1 = request.version() < http::Version::HTTP_2;
        let moved = if place.proxied {
            let client = trusted.trusted_proxies.client(place.peer, request.headers());
            place.places.move_to(place.id, client, client != place.peer)
        } else {
            Ok(())
        };
        let answer = moved.is_ok().then(|| woken::Woken::new(app.call(request), &spare));
        let place = place.clone();
        async move {
            let mut response = match answer {
                Some(answer) => answer.await,
                None => super::reply::boxed(too_many_connections()),
            };
            let status = response.status();
            let refusal = matches!(status.as_u16(), 401 | 403 | 429);
            if moved.is_err() || (refusal && place.places.refused(place.id)) {
                // HTTP/1 closes after this response; HTTP/2 is sent a GOAWAY.
                if h1 {
                    response.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
                }
                active.0.close();
            }
            // Served as it is: hyper takes any body, and boxing this one
            // (`Body::new`) cost an allocation per request.
            Ok::<_, Infallible>(response.map(|body| Tracked { body, _active: active }))
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    // One timer for the connection's life, never further away than the
    // shortest limit: whatever a request or a read changes, no deadline can
    // come before it, so it is looked at only when the timer fires (see
    // `Activity::next_check`). Re-arming a timer on every request and its
    // end cost each call two timer registrations and two more polls of the
    // connection.
    let check = tokio::time::sleep_until(activity.next_check(options));
    tokio::pin!(check);
    // The timer and the wake are watched through a waker of their own
    // (`woken`): the connection's task runs several times a request for
    // hyper's reasons, and polling both on each run cost about 800
    // instructions a call; now a run that neither woke costs a flag.
    let watch = Arc::new(woken::Spare::default());
    let mut graceful = false;
    loop {
        let event = {
            let event = async {
                tokio::select! {
                    biased;
                    () = activity.wake.notified() => Event::Asked,
                    () = check.as_mut() => Event::Check,
                }
            };
            let event = std::pin::pin!(event);
            let event = woken::Woken::new(event, &watch);
            tokio::select! {
                biased;
                served = connection.as_mut() => {
                    if let Err(e) = served {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                    return;
                }
                event = event => event,
            }
        };
        match event {
            Event::Asked => match activity.asked() {
                Wanted::Leave => {
                    tracing::debug!("closing an idle connection: a new one takes its place");
                    return;
                }
                Wanted::Finish if !graceful => {
                    graceful = true;
                    connection.as_mut().graceful_shutdown();
                }
                _ => {}
            },
            Event::Check => {
                if let Some(why) = activity.expired(options) {
                    // No request is in progress: dropping the connection
                    // loses nothing but the client's place.
                    tracing::debug!(why, "closing a connection");
                    return;
                }
                check.as_mut().reset(activity.next_check(options));
            }
        }
    }
}

/// What woke a connection's task besides its connection.
enum Event {
    /// Something was asked of it (see [`Activity::asked`]).
    Asked,
    /// Its check timer fired.
    Check,
}

/// The 429 of a request from a proxied client over its connection cap.
fn too_many_connections() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let headers = [(http::header::RETRY_AFTER, "1")];
    (http::StatusCode::TOO_MANY_REQUESTS, headers, "too many connections from this client\n").into_response()
}

/// Nothing asked of a connection's task.
const WANT_NOTHING: u8 = 0;
/// Close if still idle: a new connection takes the place.
const WANT_EVICTION: u8 = 1;
/// Finish what is in progress, then close.
const WANT_CLOSE: u8 = 2;

/// What a connection's task is to do when woken (see [`Activity::asked`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wanted {
    /// Close now: asked to give way while idle.
    Leave,
    /// Finish what is in progress, then close.
    Finish,
    /// Nothing (asked to give way, but a request has begun since).
    Nothing,
}

/// What a connection is doing, as seen from its socket and its requests.
struct Activity {
    /// When the connection was opened; the times below count from here.
    start: Instant,
    /// Requests whose response is not finished yet.
    in_flight: AtomicUsize,
    /// Requests finished.
    finished: AtomicU64,
    /// Milliseconds (after `start`) since which no request is in progress.
    idle_since: AtomicU64,
    /// Milliseconds (after `start`) plus one of the first byte read while
    /// no request was in progress (a request head arriving); 0 if none.
    head_at: AtomicU64,
    /// The connection speaks HTTP/2 (whose frames are not request heads).
    h2: AtomicBool,
    /// Whether the first read was seen.
    first_read: AtomicBool,
    /// What the connection's task is asked to do (`WANT_*`), when woken.
    wanted: AtomicU8,
    wake: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            finished: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            head_at: AtomicU64::new(0),
            h2: AtomicBool::new(false),
            first_read: AtomicBool::new(false),
            wanted: AtomicU8::new(WANT_NOTHING),
            wake: Notify::new(),
        }
    }

    /// Whether the connection could give its place away: nothing in
    /// progress, and not asked anything yet.
    fn evictable(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0 && self.wanted.load(Ordering::Acquire) == WANT_NOTHING
    }

    /// Since when the connection has had nothing in progress.
    fn idle_at(&self) -> Instant {
        self.at(self.idle_since.load(Ordering::Relaxed))
    }

    /// Asks the connection to close if it is still idle.
    fn evict(&self) {
        if self.wanted.compare_exchange(WANT_NOTHING, WANT_EVICTION, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.wake.notify_one();
        }
    }

    /// What the connection's task is asked to do, now that it was woken.
    /// A connection that leaves stays asked: its place is freed only when
    /// its task has ended, after its socket has closed, and until then it
    /// must not look idle and unasked, or a new connection of its peer
    /// could take it as its victim and be let in over the cap.
    fn asked(&self) -> Wanted {
        match self.wanted.load(Ordering::Acquire) {
            WANT_EVICTION if self.in_flight.load(Ordering::Acquire) == 0 => Wanted::Leave,
            WANT_EVICTION => {
                // A request began since: the connection stays, and may be
                // asked again once idle.
                let _ = self.wanted.compare_exchange(WANT_EVICTION, WANT_NOTHING, Ordering::AcqRel, Ordering::Acquire);
                Wanted::Nothing
            }
            WANT_CLOSE => Wanted::Finish,
            _ => Wanted::Nothing,
        }
    }

    /// Asks the connection to close once what is in progress is done.
    fn close(&self) {
        self.wanted.store(WANT_CLOSE, Ordering::Release);
        self.wake.notify_one();
    }

    #[cfg(test)]
    fn eviction_wanted(&self) -> bool {
        self.wanted.load(Ordering::Acquire) == WANT_EVICTION
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, ms: u64) -> Instant {
        self.start + Duration::from_millis(ms)
    }

    /// Bytes arrived on the socket.
    fn read(&self, bytes: &[u8]) {
        if !self.first_read.swap(true, Ordering::Relaxed) && bytes.starts_with(H2_PREFACE) {
            self.h2.store(true, Ordering::Relaxed);
        }
        if self.in_flight.load(Ordering::Acquire) == 0 && self.head_at.load(Ordering::Relaxed) == 0 {
            self.head_at.store(self.now_ms() + 1, Ordering::Relaxed);
        }
    }

    /// When to look again: the moment the connection could be found idle
    /// or stuck, but no later than the shortest limit from now. A request
    /// head or the end of a request moves the deadline, never to before
    /// that bound (a head's clock starts now and is at least the shortest
    /// limit), so a timer armed here fires no later than any deadline.
    fn next_check(&self, options: &ListenOptions) -> Instant {
        let bound = Instant::now() + options.header_read_timeout.min(options.keep_alive_timeout);
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return bound;
        }
        let (from, limit) = self.clock(options);
        (self.at(from) + limit).min(bound)
    }

    /// Which clock runs while no request is in progress: the head's (from
    /// its first byte, or from the opening for the first request) or the
    /// idle connection's.
    fn clock(&self, options: &ListenOptions) -> (u64, Duration) {
        let h2 = self.h2.load(Ordering::Relaxed);
        let head_at = self.head_at.load(Ordering::Relaxed);
        if !h2 && head_at > 0 {
            return (head_at - 1, options.header_read_timeout);
        }
        let idle_since = self.idle_since.load(Ordering::Relaxed);
        if !h2 && self.finished.load(Ordering::Relaxed) == 0 {
            return (idle_since, options.header_read_timeout);
        }
        (idle_since, options.keep_alive_timeout)
    }

    /// Why the connection should be closed now, if it should.
    fn expired(&self, options: &ListenOptions) -> Option<&'static str> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let (from, limit) = self.clock(options);
        if Instant::now() < self.at(from) + limit {
            return None;
        }
        let h2 = self.h2.load(Ordering::Relaxed);
        Some(match (h2, self.head_at.load(Ordering::Relaxed) > 0, self.finished.load(Ordering::Relaxed)) {
            (false, true, _) => "the request head did not arrive in time (header_read_timeout)",
            (false, false, 0) => "no request arrived in time (header_read_timeout)",
            _ => "idle (keep_alive_timeout)",
        })
    }
}

/// One request in progress, until its response body is done (or dropped).
struct Active(Arc<Activity>);

impl Active {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        activity.head_at.store(0, Ordering::Relaxed);
        Active(activity.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.finished.fetch_add(1, Ordering::Relaxed);
        if activity.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            activity.idle_since.store(activity.now_ms(), Ordering::Relaxed);
            activity.head_at.store(0, Ordering::Relaxed);
        }
    }
}

/// A response body that marks its request finished when it is done.
struct Tracked {
    body: ReplyBody,
    _active: Active,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = <ReplyBody as http_body::Body>::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The connection's socket, watched for bytes read.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled
            && buf.filled().len() > before
        {
            self.activity.read(&buf.filled()[before..]);
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests;
