//! placeholder
use std::sync::Arc;
use super::server::{Registry, ServerInfo};
pub fn registry() -> Arc<Registry> { Arc::new(Registry::new(ServerInfo::new("x", "0"))) }
