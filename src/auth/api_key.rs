//! API keys: find the `[[auth.clients]]` entry whose key a request presents.
//!
//! Keys are held only as SHA-256 digests (a raw `api_key` is hashed when the
//! authenticator is built), and the presented token is hashed and compared
//! with every digest in constant time, so neither timing nor memory shows
//! the keys.

use std::fmt;
use std::sync::Arc;

use subtle::ConstantTimeEq;

use super::principal::ClientPolicy;
use crate::config::sha256;

/// One keyed client.
struct Entry {
    digest: [u8; 32],
    name: Arc<str>,
    policy: Arc<ClientPolicy>,
}

/// The keyed clients.
#[derive(Default)]
pub(crate) struct ApiKeys {
    entries: Vec<Entry>,
}

impl ApiKeys {
    /// Adds a client whose key has `digest`.
    pub(crate) fn insert(&mut self, digest: [u8; 32], name: &str, policy: Arc<ClientPolicy>) {
        self.entries.push(Entry { digest, name: name.into(), policy });
    }

    /// The client whose key is `token`. Every entry is compared, whether or
    /// not an earlier one matched.
    pub(crate) fn find(&self, token: &str) -> Option<(Arc<str>, Arc<ClientPolicy>)> {
        let digest = sha256(token.as_bytes());
        let mut found = None;
        for entry in &self.entries {
            if bool::from(entry.digest.ct_eq(&digest)) && found.is_none() {
                found = Some((entry.name.clone(), entry.policy.clone()));
            }
        }
        found
    }

    /// The policy of the client named `name` (a reload looks up the
    /// clients of running sessions).
    pub(crate) fn policy_of(&self, name: &str) -> Option<Arc<ClientPolicy>> {
        self.entries.iter().find(|e| &*e.name == name).map(|e| e.policy.clone())
    }
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|e| &*e.name)).finish()
    }
}
