//! Unit tests of `listeners` (listeners.rs).

use std::time::Duration;

use super::*;
use crate::gateway::state::GatewaySession;
use crate::protocol::Version;
use crate::server::{Caller, Session};

fn listening_session() -> Arc<GwSession> {
    Arc::new(Session::detached(Version::LATEST, GatewaySession::new(1), Caller::anonymous()))
}

#[test]
fn whoever_looks_once_a_stream_is_acknowledged_finds_it() {
    let listeners = Arc::new(Listeners::default());
    let session = listening_session();
    let mut looker = None;
    listeners.register(session.id_arc(), (session.clone(), CancellationToken::new()), || {
        // A notifier that starts as the acknowledgement leaves (the client
        // read it and changed something), and takes its time to be seen.
        let others = listeners.clone();
        looker = Some(std::thread::spawn(move || others.sessions().len()));
        std::thread::sleep(Duration::from_millis(50));
        true
    });
    let seen = looker.expect("acknowledged").join().expect("the notifier ran");
    assert_eq!(seen, 1, "a notifier after the acknowledgement missed the stream");
    assert_eq!(listeners.len(), 1);
}
