//! [`Object`]: a JSON object's text with where its top-level members are.
//!
//! A result an upstream sends is read once, as the message it came in is
//! decoded: its members are found then (their keys borrowed, their values
//! skipped as text), and what later rewrites a few of them (stripping a
//! modern result for an older client, stamping one for a modern client)
//! or asks after one (`isError`) reads the index instead of parsing the
//! text again. A rewrite writes the new text from the old one's pieces and
//! indexes it as it writes.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de};
use serde_json::value::RawValue;

/// Members a result usually has at most: room for them is made at once.
const INLINE: usize = 8;

/// A JSON object as text, and the byte ranges of its top-level members.
///
/// The text is valid JSON by construction: it is a slice of a message
/// serde_json has read, or written by [`Writer`] from such slices.
#[derive(Clone, Debug)]
pub struct Object {
    text: String,
    /// On the heap: a result moves through many hands, and a small
    /// `Object` moves cheaply.
    members: Vec<Member>,
}

/// Where one member is in [`Object::text`]: its key without the quotes,
/// and its value.
#[derive(Clone, Copy, Debug)]
struct Member {
    key: (u32, u32),
    value: (u32, u32),
}

impl Object {
    /// The object's JSON text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The members in order: each key (unescaped: an object is indexed only
    /// when none of its keys has an escape) and its value's JSON text.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.members.iter().map(|m| (self.slice(m.key), self.slice(m.value)))
    }

    /// The values' texts of the members named `key`, in order. Keys are
    /// compared as bytes, without slicing the text at each one.
    pub fn values_of<'a, 'k>(&'a self, key: &'k str) -> impl Iterator<Item = &'a str> + use<'a, 'k> {
        let bytes = self.text.as_bytes();
        self.members
            .iter()
            .filter(move |m| bytes.get(m.key.0 as usize..m.key.1 as usize) == Some(key.as_bytes()))
            .map(|m| self.slice(m.value))
    }

    /// The value's text of the first member named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values_of(key).next()
    }

    /// How many members are named `key`.
    pub fn count(&self, key: &str) -> usize {
        self.values_of(key).count()
    }

    fn slice(&self, (start, end): (u32, u32)) -> &str {
        self.text.get(start as usize..end as usize).unwrap_or_default()
    }

    /// Indexes `text`, an object's JSON text (`None` when it is not an
    /// object, or has a key with an escape).
    pub fn parse(text: &str) -> Option<Object> {
        match serde_json::from_str::<Found<'_>>(text).ok()? {
            Found::Members(members) => Object::found(text, members),
            Found::Null | Found::Other => None,
        }
    }

    /// The text, given up.
    pub fn into_text(self) -> String {
        self.text
    }

    /// `{}`.
    pub fn empty() -> Object {
        Object { text: "{}".into(), members: Vec::new() }
    }

    /// The object whose members `members` are, read from `message` (their
    /// keys and values are slices of it): its text from the `{` before the
    /// first key to the `}` after the last value, copied once. An object
    /// without members is `{}` (written so: nothing says where it was).
    ///
    /// `None` for members that are not slices of `message` as an object's
    /// are; the caller keeps such text as it is.
    pub(crate) fn found(message: &str, members: Members<'_>) -> Option<Object> {
        let Some((first, last)) = members.ends else { return Some(Object::empty()) };
        let base = message.as_ptr() as usize;
        let at = |s: &str| (s.as_ptr() as usize).checked_sub(base).filter(|&at| at + s.len() <= message.len());
        let bytes = message.as_bytes();
        // A borrowed key has no escapes: its opening quote is just before it.
        let first_at = at(first)?;
        let open_quote = first_at.checked_sub(1).filter(|&q| bytes[q] == b'"')?;
        let start = bytes[..open_quote].iter().rposition(|b| !b.is_ascii_whitespace()).filter(|&b| bytes[b] == b'{')?;
        let value_end = at(last.get())? + last.get().len();
        let end = value_end + bytes[value_end..].iter().position(|b| !b.is_ascii_whitespace())?;
        if bytes[end] != b'}' {
            return None;
        }
        // The members were placed from the first key on: from the `{` now.
        let shift = u32::try_from(first_at - start).ok()?;
        let mut indexed = members.members;
        for m in &mut indexed {
            m.key = (m.key.0.checked_add(shift)?, m.key.1.checked_add(shift)?);
            m.value = (m.value.0.checked_add(shift)?, m.value.1.checked_add(shift)?);
        }
        Some(Object { text: message.get(start..=end)?.into(), members: indexed })
    }

    /// Removes the member at `index` (in [`Object::iter`]'s order), with
    /// the comma that parted it from its neighbour; the rest of the text
    /// stays as it was. Nothing happens for an index past the end.
    pub(crate) fn remove(&mut self, index: usize) {
        let Some(m) = self.members.get(index).copied() else { return };
        let quote = |m: &Member| m.key.0.saturating_sub(1);
        let (from, to) = match (index.checked_sub(1).and_then(|i| self.members.get(i)), self.members.get(index + 1)) {
            // From the end of the previous value: `, "k": v`.
            (Some(previous), _) => (previous.value.1, m.value.1),
            // The first of several: `"k": v, ` up to the next key.
            (None, Some(next)) => (quote(&m), quote(next)),
            (None, None) => (quote(&m), m.value.1),
        };
        self.text.replace_range(from as usize..to as usize, "");
        self.members.remove(index);
        self.shift_after(index, from, -i64::from(to - from));
    }

    /// Replaces the value of the member at `index` with `value`, which must
    /// be JSON text; the rest of the text stays as it was.
    pub(crate) fn replace_value(&mut self, index: usize, value: &str) {
        let Some(m) = self.members.get_mut(index) else { return };
        let (from, to) = m.value;
        let Ok(end) = u32::try_from(from as usize + value.len()) else { return };
        m.value.1 = end;
        self.text.replace_range(from as usize..to as usize, value);
        self.shift_after(index + 1, to, i64::from(end) - i64::from(to));
    }

    /// Adds a member after the last one (`value` is JSON text, `key` as
    /// [`Writer::member`] takes it), in the text as it is: the closing
    /// brace moves, nothing before it does.
    pub(crate) fn push(&mut self, key: &str, value: &str) {
        // The text ends with its closing brace (see `found` and `Writer`).
        if self.text.ends_with('}') {
            self.text.pop();
        }
        if !self.members.is_empty() {
            self.text.push(',');
        }
        let member = write_member(&mut self.text, key, value);
        self.members.push(member);
        self.text.push('}');
    }

    /// Room for `additional` more bytes of text (before [`Object::push`]es).
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.text.reserve(additional);
    }

    /// The index of the first member named `key`.
    pub(crate) fn position(&self, key: &str) -> Option<usize> {
        (0..self.members.len()).find(|&i| self.key_at(i) == Some(key))
    }

    /// How many members there are.
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// The key of the member at `index`.
    pub(crate) fn key_at(&self, index: usize) -> Option<&str> {
        self.members.get(index).map(|m| self.slice(m.key))
    }

    /// The value's text of the member at `index`.
    pub(crate) fn value_at(&self, index: usize) -> Option<&str> {
        self.members.get(index).map(|m| self.slice(m.value))
    }

    /// Moves the ranges of the members from `first` on by `delta` bytes
    /// (they all lie after `at`, where the text changed).
    fn shift_after(&mut self, first: usize, at: u32, delta: i64) {
        let moved = |n: u32| u32::try_from(i64::from(n) + delta).unwrap_or(n);
        for m in self.members.iter_mut().skip(first) {
            debug_assert!(m.key.0 >= at);
            m.key = (moved(m.key.0), moved(m.key.1));
            m.value = (moved(m.value.0), moved(m.value.1));
        }
    }

    /// A writer of a new object, for about `capacity` bytes of text. Only
    /// this crate writes objects: what it writes is valid JSON because every
    /// value written is (see [`Writer::member`]).
    pub(crate) fn writer(capacity: usize) -> Writer {
        Writer { text: String::with_capacity(capacity), members: Vec::with_capacity(INLINE) }
    }
}

/// Writes an object member by member, indexing it as it goes
/// ([`Object::writer`]).
pub(crate) struct Writer {
    text: String,
    members: Vec<Member>,
}

impl Writer {
    /// Adds a member. `value` must be JSON text (a member's value of an
    /// [`Object`], or text serde_json wrote). `key` is one of an
    /// [`Object`]'s keys or a constant: neither needs escaping (a key that
    /// did would be written escaped, and found by that text).
    pub(crate) fn member(&mut self, key: &str, value: &str) {
        self.text.push(if self.members.is_empty() { '{' } else { ',' });
        self.members.push(write_member(&mut self.text, key, value));
    }

    /// The object written.
    pub(crate) fn finish(mut self) -> Object {
        if self.members.is_empty() {
            self.text.push('{');
        }
        self.text.push('}');
        Object { text: self.text, members: self.members }
    }
}

/// Writes `"key":value` at the end of `text` (the key escaped if it needs
/// it; `value` is JSON text), and says where it is.
fn write_member(text: &mut String, key: &str, value: &str) -> Member {
    text.reserve(key.len() + value.len() + 3);
    let key_start = text.len() + 1;
    if key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        // Writing a string cannot fail.
        text.push_str(&serde_json::to_string(key).unwrap_or_default());
    } else {
        text.push('"');
        text.push_str(key);
        text.push('"');
    }
    let key_end = text.len() - 1;
    text.push(':');
    let value_start = text.len();
    text.push_str(value);
    let at = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Member { key: (at(key_start), at(key_end)), value: (at(value_start), at(text.len())) }
}

/// An object's members as read by [`Object::parse`] and by the decoder of
/// a message's `result`, or why there are none to index.
pub(crate) enum Found<'a> {
    /// `null`.
    Null,
    /// An object's members, in order (none for `{}`).
    Members(Members<'a>),
    /// Anything else: not an object, or an object with an escaped key.
    Other,
}

/// An object's members as read, before the object's own text is found
/// ([`Object::found`]).
pub(crate) struct Members<'a> {
    /// The first key and the last value, borrowed from the text read:
    /// where the object is in it.
    ends: Option<(&'a str, &'a RawValue)>,
    /// Each member's key and value, as byte ranges from the first key's
    /// first byte (the list [`Object`] keeps, moved there as it is).
    members: Vec<Member>,
}

impl<'de> Deserialize<'de> for Found<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FoundVisitor)
    }
}

struct FoundVisitor;

impl<'de> Visitor<'de> for FoundVisitor {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        let mut found = Members { ends: None, members: Vec::new() };
        let mut indexable = true;
        while let Some(key) = map.next_key::<Key<'de>>()? {
            match key {
                Key::Borrowed(key) if indexable => {
                    let value = map.next_value::<&'de RawValue>()?;
                    let first = found.ends.map_or(key, |(first, _)| first);
                    // Addresses in the same text: how far each is from the first key.
                    let from_first = |s: &str| {
                        let at = u32::try_from((s.as_ptr() as usize).checked_sub(first.as_ptr() as usize)?).ok()?;
                        Some((at, at.checked_add(u32::try_from(s.len()).ok()?)?))
                    };
                    match (from_first(key), from_first(value.get())) {
                        (Some(key), Some(value)) => found.members.push(Member { key, value }),
                        _ => indexable = false,
                    }
                    found.ends = Some((first, value));
                }
                _ => {
                    indexable = false;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if indexable { Found::Members(found) } else { Found::Other })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found<'de>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Found<'de>, E> {
        Ok(Found::Null)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Found<'de>, E> {
        Ok(Found::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Found<'de>, E> {
        Ok(Found::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Found<'de>, E> {
        Ok(Found::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Found<'de>, E> {
        Ok(Found::Other)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Found<'de>, E> {
        Ok(Found::Other)
    }
}

/// A key as read: borrowed from the text, or (with an escape) not.
enum Key<'a> {
    Borrowed(&'a str),
    Escaped,
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(key))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Key<'de>, E> {
                Ok(Key::Escaped)
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests;
