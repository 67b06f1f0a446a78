//! Resumable SSE streams: every event a session sends gets an id that names
//! its stream (`<stream>-<seq>`), and each stream keeps a bounded buffer of
//! recent events, so a client that lost its connection can reconnect with
//! `Last-Event-ID` and get what it missed (and the rest, if the stream is
//! still live). Events are only ever replayed on the stream they belong to.
//!
//! Stream 0 is the session's standalone stream (`GET`); request streams
//! (answers to `POST`s) are numbered from 1.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::mpsc;

/// Events kept per stream for replay; older ones are dropped first.
pub(crate) const STREAM_BUFFER: usize = 256;
/// Finished request streams kept for a client that may still resume them.
const FINISHED_KEPT: usize = 8;

/// The standalone stream.
pub const STANDALONE: u64 = 0;

/// One SSE event: its id and its data (a JSON-RPC message, encoded).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub data: Arc<str>,
}

/// Where a live stream's events go: a bounded channel to the connection
/// that serves the stream. A subscriber that falls behind (the channel is
/// full) is let go: its response ends, the events stay buffered, and the
/// client resumes with `Last-Event-ID` (the SSE way to catch up), so a
/// client that reads slowly costs a bounded buffer, never a growing queue.
pub type Subscriber = mpsc::Sender<Event>;

#[derive(Default)]
struct Stream {
    /// Sequence number of the last event pushed (0: none yet).
    last_seq: u64,
    /// Sequence number of the last event handed to a subscriber.
    delivered: u64,
    events: VecDeque<(u64, Arc<str>)>,
    subscriber: Option<Subscriber>,
    /// The connection that delivered its events itself (`push_own`) is gone.
    detached: bool,
    finished: bool,
}

impl Stream {
    /// Buffers the next event (dropping the oldest past [`STREAM_BUFFER`])
    /// and returns its sequence number.
    fn append(&mut self, data: &Arc<str>) -> u64 {
        self.last_seq += 1;
        if self.events.len() == STREAM_BUFFER {
            self.events.pop_front();
        }
        self.events.push_back((self.last_seq, data.clone()));
        self.last_seq
    }

    fn send_live(&mut self, seq: u64, stream: u64, data: &Arc<str>) {
        let Some(sub) = &self.subscriber else { return };
        match sub.try_send(Event { id: event_id(stream, seq), data: data.clone() }) {
            Ok(()) => self.delivered = seq,
            // The connection went away, or cannot keep up: let it go, and
            // keep buffering for a resumption.
            Err(_) => self.subscriber = None,
        }
    }

    fn replay_after(&mut self, stream: u64, after: u64, sub: &Subscriber) -> bool {
        for (seq, data) in self.events.iter().filter(|(seq, _)| *seq > after) {
            if sub.try_send(Event { id: event_id(stream, *seq), data: data.clone() }).is_err() {
                return false;
            }
            self.delivered = *seq;
        }
        true
    }
}

/// Why a resumption is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    #[error("Last-Event-ID {0:?} is not an event id this server issued")]
    Malformed(String),
    #[error("the stream of event {0:?} is gone (finished or evicted)")]
    Unknown(String),
    #[error("events after {0:?} are no longer buffered")]
    TooOld(String),
}

/// A session's streams.
#[derive(Default)]
pub struct Replay {
    streams: HashMap<u64, Stream>,
    next_stream: u64,
    finished_order: VecDeque<u64>,
}

/// `<stream>-<seq>`.
pub fn event_id(stream: u64, seq: u64) -> String {
    format!("{stream}-{seq}")
}

/// Parses `<stream>-<seq>`.
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

impl Replay {
    /// Opens a request stream whose events the caller delivers itself (the
    /// body of the POST's response, see [`Replay::push_own`]), until a
    /// resumption attaches a subscriber.
    pub fn open(&mut self) -> u64 {
        self.next_stream += 1;
        let id = self.next_stream;
        self.streams.insert(id, Stream::default());
        id
    }

    /// Appends an event to `stream` and delivers it if someone listens.
    pub fn push(&mut self, stream: u64, data: Arc<str>) {
        let s = self.streams.entry(stream).or_default();
        let seq = s.append(&data);
        s.send_live(seq, stream, &data);
    }

    /// Appends an event to `stream` for the caller to deliver on its own
    /// connection, and returns the event's id. `None` when a resumption has
    /// attached a subscriber meanwhile: the event went to that subscriber,
    /// and so must the rest of the stream (with [`Replay::push`]).
    pub fn push_own(&mut self, stream: u64, data: Arc<str>) -> Option<String> {
        let s = self.streams.entry(stream).or_default();
        let seq = s.append(&data);
        if s.subscriber.is_some() {
            s.send_live(seq, stream, &data);
            return None;
        }
        s.delivered = seq;
        Some(event_id(stream, seq))
    }

    /// The connection that delivered `stream`'s events itself is gone: what
    /// follows is kept for a resumption.
    pub fn detach(&mut self, stream: u64) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.detached = true;
        }
    }

    /// Marks a request stream finished: its subscriber's response ends. A
    /// stream whose every event reached a live connection (a subscriber, or
    /// the caller of [`Replay::push_own`]) is forgotten; one that lost its
    /// connection stays (a few of them) for resumption.
    pub fn finish(&mut self, stream: u64) {
        let Some(s) = self.streams.get_mut(&stream) else { return };
        s.finished = true;
        let live = match &s.subscriber {
            Some(sub) => !sub.is_closed(),
            None => !s.detached,
        };
        let complete = live && s.delivered == s.last_seq;
        s.subscriber = None;
        if complete {
            self.streams.remove(&stream);
            return;
        }
        self.finished_order.push_back(stream);
        while self.finished_order.len() > FINISHED_KEPT {
            if let Some(old) = self.finished_order.pop_front() {
                self.streams.remove(&old);
            }
        }
    }

    /// Whether a live connection holds the standalone stream now.
    pub fn has_standalone(&self) -> bool {
        self.streams.get(&STANDALONE).and_then(|s| s.subscriber.as_ref()).is_some_and(|sub| !sub.is_closed())
    }

    /// Attaches `subscriber` to the standalone stream, first handing it what
    /// no connection received yet. `false` when a live connection already
    /// holds it.
    pub fn attach_standalone(&mut self, subscriber: Subscriber) -> bool {
        let s = self.streams.entry(STANDALONE).or_default();
        if s.subscriber.as_ref().is_some_and(|sub| !sub.is_closed()) {
            return false;
        }
        let after = s.delivered;
        if s.replay_after(STANDALONE, after, &subscriber) {
            s.subscriber = Some(subscriber);
        }
        true
    }

    /// Resumes the stream `last_event_id` belongs to: replays what came
    /// after it and, if the stream is still live, keeps `subscriber` on it.
    /// Returns whether the stream is still live (the response stays open).
    pub fn resume(&mut self, last_event_id: &str, subscriber: Subscriber) -> Result<bool, ResumeError> {
        let (stream, seq) =
            parse_event_id(last_event_id).ok_or_else(|| ResumeError::Malformed(last_event_id.to_owned()))?;
        let s = self.streams.get_mut(&stream).ok_or_else(|| ResumeError::Unknown(last_event_id.to_owned()))?;
        let oldest = s.events.front().map(|(seq, _)| *seq).unwrap_or(s.last_seq + 1);
        if seq + 1 < oldest {
            return Err(ResumeError::TooOld(last_event_id.to_owned()));
        }
        if !s.replay_after(stream, seq, &subscriber) {
            return Ok(false);
        }
        if s.finished {
            if s.delivered == s.last_seq {
                self.streams.remove(&stream);
                self.finished_order.retain(|id| *id != stream);
            }
            return Ok(false);
        }
        s.subscriber = Some(subscriber);
        Ok(true)
    }

    /// Whether any stream holds events or listeners (for tests).
    #[cfg(test)]
    fn stream_count(&self) -> usize {
        self.streams.len()
    }
}

#[cfg(test)]
mod tests;
