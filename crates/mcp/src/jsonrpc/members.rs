//! A JSON object's top-level members as text: read without decoding their
//! values ([`Members`]), and written back, some replaced or added, without
//! checking the result again ([`object`]). What rewrites a few fields of a
//! large result (stamping a 2026-07-28 one, stripping one for an older
//! client) uses these instead of a tree.

use serde::ser::{SerializeMap as _, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

/// How many members [`Members`] holds without allocating (results have a
/// handful).
const INLINE_MEMBERS: usize = 16;

/// An object's members, in order, as borrowed text. Reading fails on a key
/// with an escape (it cannot be borrowed): callers fall back to a tree.
pub(crate) struct Members<'a> {
    first: [Option<(&'a str, &'a RawValue)>; INLINE_MEMBERS],
    more: Vec<(&'a str, &'a RawValue)>,
}

impl Default for Members<'_> {
    /// No members (the object `{}`).
    fn default() -> Self {
        Members { first: [None; INLINE_MEMBERS], more: Vec::new() }
    }
}

impl<'a> Members<'a> {
    /// The members, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(&'a str, &'a RawValue)> {
        self.first.iter().map_while(Option::as_ref).chain(&self.more)
    }

    /// The value of the first member named `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    /// How many members are named `key`.
    pub(crate) fn count(&self, key: &str) -> usize {
        self.iter().filter(|(k, _)| *k == key).count()
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Members::default();
                let mut n = 0;
                while let Some(key) = map.next_key::<&'de str>()? {
                    let member = (key, map.next_value::<&'de RawValue>()?);
                    match members.first.get_mut(n) {
                        Some(slot) => *slot = Some(member),
                        None => members.more.push(member),
                    }
                    n += 1;
                }
                Ok(members)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The object of `members`, in the order they come, as JSON text: keys
/// escaped, values written as they are. Every value is valid JSON already
/// (a [`RawValue`]), so the text is not parsed again to check it, as
/// [`RawValue::from_string`] would. The members are written as they come:
/// no list of them is made first.
pub(crate) fn object<'a>(members: impl Iterator<Item = (&'a str, &'a RawValue)>) -> Box<RawValue> {
    /// Written once: the members are taken as they are written.
    struct Object<I>(std::cell::Cell<Option<I>>);
    impl<'a, I: Iterator<Item = (&'a str, &'a RawValue)>> Serialize for Object<I> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(None)?;
            for (key, value) in self.0.take().into_iter().flatten() {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }
    }
    // Writing strings and raw values into a string cannot fail.
    serde_json::value::to_raw_value(&Object(std::cell::Cell::new(Some(members)))).unwrap_or_else(|_| empty())
}

/// `{}`.
fn empty() -> Box<RawValue> {
    serde_json::value::to_raw_value(&serde_json::Map::new()).expect("an empty object is written")
}

/// `value` as raw JSON (numbers, strings, small constants the rewriters add).
pub(crate) fn raw<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_read_and_written_as_text() {
        let text = r#"{"a":[1, 2],"b":{"c":"d"},"a":null}"#;
        let members: Members<'_> = serde_json::from_str(text).expect("an object");
        assert_eq!(members.get("a").map(RawValue::get), Some("[1, 2]"), "the first one, as it was written");
        assert_eq!(members.count("a"), 2);
        let all: Vec<_> = members.iter().copied().collect();
        assert_eq!(object(all.iter().copied()).get(), r#"{"a":[1, 2],"b":{"c":"d"},"a":null}"#);
        let added = raw("x\"y");
        assert_eq!(object([("k\n", &*added)].into_iter()).get(), r#"{"k\n":"x\"y"}"#, "keys and strings escaped");
        assert_eq!(object(Members::default().iter().copied()).get(), "{}");
        assert!(serde_json::from_str::<Members<'_>>(r#"{"\u0061":1}"#).is_err(), "an escaped key is not borrowed");
        assert!(serde_json::from_str::<Members<'_>>("[1]").is_err());
    }
}
