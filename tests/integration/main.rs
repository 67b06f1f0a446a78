//! Integration tests: the real `toolgate` binary on a loopback port, in front
//! of real upstream processes (the project's fixture server, the demo
//! upstream, and servers written with the official Python SDK, over stdio,
//! Streamable HTTP and legacy HTTP+SSE), driven over Streamable HTTP by a
//! raw client and by real SDK clients, and a matrix of real clients and
//! public servers over every downstream transport.
//!
//! One test binary so everything links once.

// Test and benchmark drivers have no request spans to carry into their tasks.
#![allow(clippy::disallowed_methods)]

mod audit;
mod auth;
mod budgets;
mod call_tool;
mod client_capabilities;
mod common;
mod concerns;
mod conformance;
mod connections;
mod disclosure;
mod downstream;
mod fairness;
mod forwarding;
mod health;
mod hosts;
mod identity;
mod import;
mod interop;
mod interop_matrix;
mod legacy_upstream;
mod limits;
mod listen;
mod lock;
mod metrics;
mod modern;
mod modern_params;
mod mrtr;
mod oauth;
mod outage;
mod reload;
mod replicas;
mod search;
mod second_review;
mod security;
mod security_review;
mod sessions;
mod state_tls;
mod traces;
mod transport;
mod upstream_faults;
mod validation;
