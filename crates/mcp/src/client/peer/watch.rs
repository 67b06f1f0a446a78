//! The deadline and the cancellation of a peer's calls in flight, kept with
//! each call's pending entry and looked at by one ticker task per connection
//! every [`TICK`] while calls are watched.
//!
//! Why not a timer and a cancellation waiter per call: registering both,
//! and taking them down again, was about 3,000 instructions of every
//! forwarded call (a lock on the runtime's timer wheel, another on the
//! token's waiter list), for a timeout that almost never fires and a
//! cancellation that almost never comes. The ticker's own timer is
//! registered once per tick while calls are watched, and the task ends when
//! none are. A call is so given up at most one tick late, which nobody can
//! tell: upstream timeouts are seconds, and a cancellation has no answer.
//!
//! Why 50 ms: each connection with calls in flight wakes its ticker once a
//! tick, so a thousand connections each waiting on a long call cost 20,000
//! wake-ups a second (at 10 ms it would be 100,000), while a forwarded
//! call at full load pays for a tick only once in hundreds of calls.

use std::sync::Weak;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{GiveUp, Peer};

/// How often the watched calls of a connection are looked at.
pub(crate) const TICK: Duration = Duration::from_millis(50);

/// What a call in flight is watched for.
pub(super) struct Watch {
    /// When the call is given up unless progress comes first.
    deadline: Instant,
    /// The upstream's timeout: what each progress notification restarts.
    after: Duration,
    /// Fires when the client cancels the request (`None`: no one can).
    cancel: Option<CancellationToken>,
}

/// Why a watched call was given up.
pub(super) enum GivenUp {
    /// Its deadline passed (the upstream's timeout, restarted by progress).
    TimedOut(Duration),
    /// The client cancelled it.
    Cancelled,
}

impl GivenUp {
    /// What the upstream hears in `notifications/cancelled`.
    pub(super) fn reason(&self) -> &'static str {
        match self {
            GivenUp::TimedOut(_) => GiveUp::TIMED_OUT,
            GivenUp::Cancelled => GiveUp::CANCELLED_BY_CLIENT,
        }
    }
}

impl Watch {
    /// A call given `after` from now, or until `cancel` fires.
    pub(super) fn new(after: Duration, cancel: Option<CancellationToken>) -> Self {
        Self { deadline: Instant::now() + after, after, cancel }
    }

    /// Progress came: a long job that reports progress is not hung.
    pub(super) fn restart(&mut self) {
        self.deadline = Instant::now() + self.after;
    }

    /// Whether the call is to be given up at `now`, and why (a cancellation
    /// first: the client said so).
    pub(super) fn given_up(&self, now: Instant) -> Option<GivenUp> {
        if self.cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
            Some(GivenUp::Cancelled)
        } else if now >= self.deadline {
            Some(GivenUp::TimedOut(self.after))
        } else {
            None
        }
    }
}

/// Looks at `peer`'s watched calls every tick; ends when none is left (or
/// the peer is gone). Started by the first watched call (see
/// [`Peer::watch`]).
pub(super) async fn ticker(peer: Weak<Peer>) {
    loop {
        tokio::time::sleep(TICK).await;
        let Some(peer) = peer.upgrade() else { return };
        if !peer.sweep(Instant::now()) {
            return;
        }
    }
}
