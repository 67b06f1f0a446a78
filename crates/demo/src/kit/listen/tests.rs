//! Unit tests of `listen` (listen.rs).

use std::time::Duration;

use super::*;
use toolgate_mcp::protocol::Version;
use toolgate_mcp::server::Caller;

#[test]
fn a_broadcast_once_a_stream_is_acknowledged_finds_it() {
    let listening = Arc::new(Listening::default());
    let session = Arc::new(Session::detached(Version::LATEST, SessionState::default(), Caller::anonymous()));
    let mut looker = None;
    listening.register(session.id_arc(), session.clone(), || {
        // What the client triggers once it read the acknowledgement.
        let others = listening.clone();
        looker = Some(std::thread::spawn(move || others.open.lock().len()));
        std::thread::sleep(Duration::from_millis(50));
        true
    });
    assert_eq!(looker.expect("acknowledged").join().expect("ran"), 1, "the stream was not there yet");
}
