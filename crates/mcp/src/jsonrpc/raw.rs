//! [`Raw`]: a result kept as JSON text, shared or owned.

use std::fmt;
use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::object::Object;

/// A result as JSON text ([`super::Outcome::Prepared`]): shared when it is
/// served many times (a cached `tools/list`), owned when it passes through
/// once (an upstream's answer). Owned, a proxied result is never copied
/// into an `Arc` just to be held, nor again when it is rewritten as text.
/// An upstream's result that is an object is held as an [`Object`], whose
/// members were found as the message was decoded.
#[derive(Clone)]
pub struct Raw(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Arc<RawValue>),
    Owned(Box<RawValue>),
    Object(Object),
}

impl Raw {
    /// The JSON text.
    pub fn get(&self) -> &str {
        match &self.0 {
            Repr::Shared(raw) => raw.get(),
            Repr::Owned(raw) => raw.get(),
            Repr::Object(object) => object.text(),
        }
    }

    /// The object and its members, when the text is held indexed.
    pub fn object(&self) -> Option<&Object> {
        match &self.0 {
            Repr::Object(object) => Some(object),
            Repr::Shared(_) | Repr::Owned(_) => None,
        }
    }

    /// The object and its members, to read or edit: held indexed from now
    /// on (found now if the text was held whole, the same text). `None`: the
    /// text is not an object, or has a key with an escape; it stays as it is.
    pub(crate) fn object_mut(&mut self) -> Option<&mut Object> {
        if !matches!(self.0, Repr::Object(_)) {
            self.0 = Repr::Object(Object::parse(self.get())?);
        }
        match &mut self.0 {
            Repr::Object(object) => Some(object),
            Repr::Shared(_) | Repr::Owned(_) => None,
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

impl From<Object> for Raw {
    fn from(object: Object) -> Self {
        Raw(Repr::Object(object))
    }
}

impl AsRef<[u8]> for Raw {
    fn as_ref(&self) -> &[u8] {
        self.get().as_bytes()
    }
}

impl fmt::Debug for Raw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for Raw {
    /// As the text it is. An [`Object`]'s text is checked again on this
    /// path (serde_json writes text as it is only from a `RawValue`); the
    /// usual ways out ([`super::Message::encode`], an HTTP answer) write it
    /// without.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Shared(raw) => raw.serialize(serializer),
            Repr::Owned(raw) => raw.serialize(serializer),
            Repr::Object(object) => RawValue::from_string(object.text().to_owned())
                .map_err(serde::ser::Error::custom)?
                .serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_owned_and_indexed_hold_the_same_text_and_serialize_as_it() {
        let text = r#"{"content":[{"type":"text","text":"hi"}], "isError" :false}"#;
        let owned = Raw::from(RawValue::from_string(text.to_owned()).unwrap());
        let shared = Raw::from(Arc::<RawValue>::from(RawValue::from_string(text.to_owned()).unwrap()));
        let indexed = Raw::from(Object::parse(text).unwrap());
        for raw in [owned.clone(), shared.clone(), indexed.clone()] {
            assert_eq!(raw.get(), text);
            assert_eq!(serde_json::to_string(&raw).unwrap(), text);
            assert_eq!(format!("{raw:?}"), text);
            let mut raw = raw;
            let object = raw.object_mut().expect("an object");
            assert_eq!(object.get("isError"), Some("false"));
        }
        assert!(owned.object().is_none() && shared.object().is_none());
        assert!(indexed.object().is_some());
        assert_eq!(AsRef::<[u8]>::as_ref(&owned), text.as_bytes());
        let array = Raw::from(RawValue::from_string("[1]".to_owned()).unwrap());
        let mut array = array;
        assert!(array.object_mut().is_none());
        assert_eq!(array.get(), "[1]", "left as it is");
    }
}
