//! Integration tests: the real `toolgate` binary on a loopback port, in front
//! of real upstream processes (the project's fixture server, the demo
//! upstream, and servers written with the official Python SDK), driven over
//! Streamable HTTP by a raw client and by real SDK clients.
//!
//! One test binary so everything links once.

mod common;
mod conformance;
mod disclosure;
mod forwarding;
mod sessions;
mod transport;
