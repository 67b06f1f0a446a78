//! Transports where one ordered channel carries everything the server sends
//! to a client (stdio, legacy HTTP+SSE): no per-request streams, so every
//! frame of every request, and the standalone messages, go down one pipe.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::engine::Engine;
use super::handler::Handler;
use super::session::{Downlink, Frame, Session};
use crate::jsonrpc::Message;

/// The client side of a single-channel transport: where messages go out.
pub type Outbox = mpsc::UnboundedSender<Arc<str>>;

/// A downlink whose frames are written, in order, to `outbox`.
pub fn downlink_to(outbox: Outbox) -> Downlink {
    let (downlink, mut frames) = Downlink::channel();
    tokio::spawn(async move {
        while let Some(frame) = frames.recv().await {
            let message = match frame {
                Frame::Message(m) => m,
                Frame::Final(r) => Message::Response(r),
                Frame::Stream | Frame::End => continue,
            };
            if outbox.send(Arc::from(message.encode())).is_err() {
                return;
            }
        }
    });
    downlink
}

/// Sends the session's standalone messages (list changes and the like) to
/// `outbox` as well.
pub fn attach_standalone<S>(session: &Session<S>, outbox: Outbox) {
    let (tx, mut events) = mpsc::unbounded_channel();
    session.replay().attach_standalone(tx);
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if outbox.send(event.data).is_err() {
                return;
            }
        }
    });
}

/// Handles one message of an established session on its own task, writing
/// the response (if any) after whatever the request produced.
pub fn dispatch<H: Handler>(
    engine: &Arc<Engine<H>>,
    session: &Arc<Session<H::State>>,
    message: Message,
    downlink: &Downlink,
) {
    let (engine, session, downlink) = (engine.clone(), session.clone(), downlink.clone());
    tokio::spawn(async move {
        if let Some(response) = engine.handle(&session, message, downlink.clone()).await {
            downlink.finish(response);
        }
    });
}
