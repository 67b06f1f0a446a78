//! placeholder
use super::server::{Registry, ServerInfo};
use std::sync::Arc;
pub fn registry() -> Arc<Registry> {
    Arc::new(Registry::new(ServerInfo::new("x", "0")))
}
