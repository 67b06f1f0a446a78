//! [`Raw`]: a result kept as JSON text, shared or owned.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

/// A result as JSON text ([`super::Outcome::Prepared`]): shared when it is
/// served many times (a cached `tools/list`), owned when it passes through
/// once (an upstream's answer). Owned, a proxied result is never copied
/// into an `Arc` just to be held, nor again when it is rewritten as text.
#[derive(Clone)]
pub struct Raw(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Arc<RawValue>),
    Owned(Box<RawValue>),
}

impl Raw {
    /// The JSON text.
    pub fn get(&self) -> &str {
        self.deref().get()
    }
}

impl Deref for Raw {
    type Target = RawValue;

    fn deref(&self) -> &RawValue {
        match &self.0 {
            Repr::Shared(raw) => raw,
            Repr::Owned(raw) => raw,
        }
    }
}

impl From<Arc<RawValue>> for Raw {
    fn from(raw: Arc<RawValue>) -> Self {
        Raw(Repr::Shared(raw))
    }
}

impl From<Box<RawValue>> for Raw {
    fn from(raw: Box<RawValue>) -> Self {
        Raw(Repr::Owned(raw))
    }
}

impl AsRef<[u8]> for Raw {
    fn as_ref(&self) -> &[u8] {
        self.get().as_bytes()
    }
}

impl fmt::Debug for Raw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.deref(), f)
    }
}

impl Serialize for Raw {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.deref().serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_and_owned_hold_the_same_text_and_serialize_as_it() {
        let text = r#"{"content":[{"type":"text","text":"hi"}]}"#;
        let owned = Raw::from(RawValue::from_string(text.to_owned()).unwrap());
        let shared = Raw::from(Arc::<RawValue>::from(RawValue::from_string(text.to_owned()).unwrap()));
        for raw in [owned.clone(), shared.clone()] {
            assert_eq!(raw.get(), text);
            assert_eq!(serde_json::to_string(&raw).unwrap(), text);
        }
        assert_eq!(AsRef::<[u8]>::as_ref(&owned), text.as_bytes());
    }
}
