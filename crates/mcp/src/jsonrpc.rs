//! JSON-RPC 2.0 envelopes as toolgate sees them on every leg.
//!
//! toolgate is a transparent proxy, so it decodes only the envelope: `id`,
//! `method`, `params` and `error` as opaque [`Value`]s, and a `result` as
//! the text it came as ([`Raw`]), an object's top-level members found in
//! the same pass ([`Object`]) for what rewrites or reads one of them.
//! Payloads are rewritten only where the gateway has a reason to (see
//! `gateway`); every other field, `_meta` included, is carried through as it
//! arrived.
//!
//! Request ids are kept as the exact JSON text the peer sent ([`Id`]), so a
//! response echoes `1` as `1` and `"1"` as `"1"`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use object::Found;

mod error;
pub(crate) mod members;
mod object;
mod raw;

pub use error::{ErrorObject, codes};
pub use object::Object;
pub use raw::Raw;

/// A JSON-RPC request id exactly as the peer wrote it (a string or an integer).
///
/// Equality and hashing use the JSON text, so `1` and `"1"` are different ids,
/// as they are on the wire.
///
/// A short id (an integer, or a string without escapes: every id toolgate
/// makes, and most ids clients send) is kept inline, so that ids, made or
/// decoded on every call, cost no allocation; any other is kept as its text.
#[derive(Clone)]
pub struct Id(Repr);

/// Most bytes of JSON text an id kept inline has (a `u64` needs 20, an
/// `i64` 20 with its sign).
const INLINE: usize = 22;

#[derive(Clone)]
enum Repr {
    /// Its JSON text: an integer as serde_json writes it, or a string
    /// (quotes included) without a backslash, which serde_json writes back
    /// exactly as it was.
    Inline { len: u8, text: [u8; INLINE] },
    /// Any other id, as written.
    Raw(Arc<RawValue>),
}

impl Id {
    /// An integer id, used for the ids toolgate itself allocates.
    pub fn number(n: u64) -> Self {
        let mut digits = [0u8; INLINE];
        let mut at = INLINE;
        let mut rest = n;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        Self::inline(&digits[at..]).unwrap_or_else(|| Self::serialized(&n))
    }

    /// A string id.
    pub fn string(s: &str) -> Self {
        let plain = s.len() + 2 <= INLINE && !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        if plain {
            let mut text = [0u8; INLINE];
            text[0] = b'"';
            text[1..=s.len()].copy_from_slice(s.as_bytes());
            text[s.len() + 1] = b'"';
            if let Some(id) = Self::inline(&text[..s.len() + 2]) {
                return id;
            }
        }
        Self::serialized(s)
    }

    /// `text` inline, if it fits.
    fn inline(text: &[u8]) -> Option<Self> {
        let len = u8::try_from(text.len()).ok().filter(|&n| usize::from(n) <= INLINE)?;
        let mut buf = [0u8; INLINE];
        buf[..text.len()].copy_from_slice(text);
        Some(Self(Repr::Inline { len, text: buf }))
    }

    /// An id written by serde_json (its text is not parsed again to be
    /// checked, as text from a peer is).
    fn serialized<T: Serialize + ?Sized>(value: &T) -> Self {
        Self(Repr::Raw(Arc::from(serde_json::value::to_raw_value(value).expect("an integer or a string serializes"))))
    }

    /// Builds an id from a JSON value, refusing anything MCP does not allow as
    /// an id (null, booleans, floats, arrays, objects).
    pub fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::String(s) => Some(Self::string(s)),
            Value::Number(n) => match n.as_u64() {
                Some(u) => Some(Self::number(u)),
                None if n.is_i64() => Some(Self::serialized(n)),
                None => None,
            },
            _ => None,
        }
    }

    /// The id's JSON text as bytes, unchecked: what equality, hashing and
    /// [`Id::as_u64`] read (checking it is text costs on every call).
    fn text(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, text } => &text[..usize::from(*len)],
            Repr::Raw(raw) => raw.get().as_bytes(),
        }
    }

    /// The id as the JSON text it was written as.
    pub fn as_json(&self) -> &str {
        match &self.0 {
            // Only ever filled from text (see `inline`'s callers).
            Repr::Inline { len, text } => std::str::from_utf8(&text[..usize::from(*len)]).unwrap_or_default(),
            Repr::Raw(raw) => raw.get(),
        }
    }

    /// The id as a [`Value`], for placing into `params` (e.g. `requestId`).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.as_json()).unwrap_or(Value::Null)
    }

    /// The integer value of an id toolgate allocated itself.
    pub fn as_u64(&self) -> Option<u64> {
        let digits = self.text();
        if digits.is_empty() {
            return None;
        }
        digits.iter().try_fold(0u64, |n, &d| {
            let digit = d.checked_sub(b'0').filter(|d| *d <= 9)?;
            n.checked_mul(10)?.checked_add(u64::from(digit))
        })
    }

    /// Checks the JSON text of an id as a peer wrote it (a [`RawValue`]'s):
    /// the id kept inline, or `None` when it must be kept as written.
    fn check_text(text: &str) -> Result<Option<Self>, &'static str> {
        // A raw value has no whitespace around it; JSON's is ASCII anyway.
        let text = text.trim_ascii_start();
        let (ok, exact) = match text.as_bytes().first() {
            // Without a backslash, serde_json writes the string back as it was.
            Some(b'"') => (true, memchr::memchr(b'\\', text.as_bytes()).is_none()),
            // As serde_json writes it: `-0` is not, and stays as it came. A
            // JSON number of digits alone (no fraction, no exponent) is an
            // integer.
            Some(b'-' | b'0'..=b'9') => {
                let digits = text.strip_prefix('-').unwrap_or(text);
                let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
                (integer, integer && canonical_integer(text))
            }
            _ => (false, false),
        };
        if !ok {
            return Err("a request id must be a string or an integer");
        }
        Ok(exact.then(|| Self::inline(text.as_bytes())).flatten())
    }

    fn validate(raw: Box<RawValue>) -> Result<Self, &'static str> {
        Ok(Self::check_text(raw.get())?.unwrap_or_else(|| Self(Repr::Raw(Arc::from(raw)))))
    }

    /// [`Id::validate`] of text borrowed from a message being decoded.
    fn validate_borrowed(raw: &RawValue) -> Result<Self, &'static str> {
        Ok(Self::check_text(raw.get())?.unwrap_or_else(|| Self(Repr::Raw(Arc::from(raw.to_owned())))))
    }
}

/// Whether `text` (JSON text of an integer) is what serde_json writes for
/// that integer: no `-0`, and within `i64`/`u64`.
fn canonical_integer(text: &str) -> bool {
    match text.strip_prefix('-') {
        Some(digits) => !digits.starts_with('0') && text.parse::<i64>().is_ok(),
        None => (text == "0" || !text.starts_with('0')) && text.parse::<u64>().is_ok(),
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl Eq for Id {}

impl Hash for Id {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text().hash(state);
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_json())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_json())
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Raw(raw) => raw.serialize(s),
            // Written back as it came (see `Repr::Inline`).
            Repr::Inline { .. } => {
                let text = self.as_json();
                match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
                    Some(string) => s.serialize_str(string),
                    None => match text.parse::<u64>() {
                        Ok(n) => s.serialize_u64(n),
                        Err(_) => s.serialize_i64(text.parse().map_err(serde::ser::Error::custom)?),
                    },
                }
            }
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        Id::validate(raw).map_err(D::Error::custom)
    }
}

/// A request: a method call that expects a response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Id,
    pub method: String,
    pub params: Option<Value>,
}

/// A notification: a method call without an id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    pub method: String,
    pub params: Option<Value>,
}

/// A response: the result of a request, or its error.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// `None` only for an error about a message whose id could not be read.
    pub id: Option<Id>,
    pub outcome: Outcome,
}

/// What a request produced.
#[derive(Debug, Clone)]
pub enum Outcome {
    Result(Value),
    /// A result as JSON text: serialized ahead of time (e.g. the cached
    /// `tools/list`), or as decoded from a peer. Sent without re-encoding.
    Prepared(Raw),
    /// The `error` member, kept whole so `data` and unknown fields survive.
    Error(Value),
}

impl PartialEq for Outcome {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Outcome::Result(a), Outcome::Result(b)) | (Outcome::Error(a), Outcome::Error(b)) => a == b,
            (Outcome::Prepared(a), Outcome::Prepared(b)) => a.get() == b.get(),
            // A decoded result stays raw: equal if it holds the same JSON.
            (Outcome::Result(v), Outcome::Prepared(raw)) | (Outcome::Prepared(raw), Outcome::Result(v)) => {
                serde_json::from_str::<Value>(raw.get()).is_ok_and(|parsed| parsed == *v)
            }
            _ => false,
        }
    }
}

impl Outcome {
    /// An error outcome from a typed error object.
    pub fn error(e: ErrorObject) -> Self {
        Outcome::Error(e.into_value())
    }

    /// The result as a [`Value`] (decoding a prepared one), or `None` for an error.
    pub fn result_value(&self) -> Option<Value> {
        match self {
            Outcome::Result(v) => Some(v.clone()),
            Outcome::Prepared(raw) => serde_json::from_str(raw.get()).ok(),
            Outcome::Error(_) => None,
        }
    }

    /// The error code, if this is an error.
    pub fn error_code(&self) -> Option<i64> {
        match self {
            Outcome::Error(e) => e.get("code").and_then(Value::as_i64),
            Outcome::Result(_) | Outcome::Prepared(_) => None,
        }
    }
}

/// Any JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// Why bytes from a peer are not a JSON-RPC message.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON at all (JSON-RPC `-32700`).
    #[error("parse error: {0}")]
    Parse(#[source] serde_json::Error),
    /// JSON, but not a valid JSON-RPC message (JSON-RPC `-32600`). Carries the
    /// id when one could be read, so the error can be answered.
    #[error("invalid request: {reason}")]
    Invalid { id: Option<Id>, reason: String },
}

impl DecodeError {
    /// The JSON-RPC error response that answers this decode failure.
    pub fn to_response(&self) -> Response {
        match self {
            DecodeError::Parse(e) => Response {
                id: None,
                outcome: Outcome::error(ErrorObject::new(codes::PARSE_ERROR, format!("Parse error: {e}"))),
            },
            DecodeError::Invalid { id, reason } => Response {
                id: id.clone(),
                outcome: Outcome::error(ErrorObject::new(codes::INVALID_REQUEST, format!("Invalid request: {reason}"))),
            },
        }
    }
}

/// The envelope as read off the wire, before it is classified. `R` is how
/// `result` is read: its members found ([`Found`]), or, where they cannot
/// be, as text ([`RawValue`]).
#[derive(Deserialize)]
struct Envelope<'a, R> {
    /// Borrowed from the text: only compared.
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    /// Borrowed: a short id is kept inline (see [`Id`]).
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    /// Kept as JSON text: a proxied result goes out again as it came in,
    /// without being parsed into (and serialized back from) a tree.
    #[serde(default = "absent")]
    result: Option<R>,
    #[serde(default)]
    error: Option<Value>,
}

/// What comes before a response's id, and between it and its result
/// ([`Message::encode`] and an HTTP answer write a result held as text
/// between them).
pub const PREPARED_HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
/// See [`PREPARED_HEAD`].
pub const PREPARED_RESULT: &str = r#","result":"#;

/// Puts JSON text on one line: a line break in it can only be whitespace
/// between tokens (JSON strings have none unescaped), so each becomes a
/// space. Text a peer sent and toolgate holds as it came (a result) may
/// have them; a stdio line may not.
pub fn one_line(text: &mut String) {
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        *text = text.replace(['\n', '\r'], " ");
    }
}

/// A member not in the message (a default without asking `R` for one).
fn absent<R>() -> Option<R> {
    None
}

impl Message {
    /// Decodes one message (not a batch) from JSON text.
    pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
        let lenient = |e: serde_json::Error| {
            if e.is_syntax() || e.is_eof() {
                DecodeError::Parse(e)
            } else {
                DecodeError::Invalid { id: None, reason: e.to_string() }
            }
        };
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::decode_text(text, lenient),
            // Not UTF-8: parsed as bytes, for the same error.
            Err(_) => Self::classify(serde_json::from_slice::<Envelope<Box<RawValue>>>(bytes).map_err(lenient)?),
        }
    }

    /// Decodes an element of a batch: the array parsed, so whatever is wrong
    /// with an element makes it an invalid request, not a parse error.
    fn decode_element(text: &str) -> Result<Message, DecodeError> {
        Self::decode_text(text, |e| DecodeError::Invalid { id: None, reason: e.to_string() })
    }

    /// Decodes `text`, a result's members found as it is read; a result
    /// they cannot be found in (not an object, an escaped key) is read
    /// again as text.
    fn decode_text(text: &str, error: impl Fn(serde_json::Error) -> DecodeError) -> Result<Message, DecodeError> {
        let mut env: Envelope<Found<'_>> = serde_json::from_str(text).map_err(&error)?;
        let indexed = match env.result.take() {
            None | Some(Found::Null) => return Self::classify_with(env, None),
            Some(Found::Members(members)) => Object::found(text, members),
            Some(Found::Other) => None,
        };
        match indexed {
            Some(object) => Self::classify_with(env, Some(Raw::from(object))),
            // Not an object with plain keys: read again, the result as text.
            None => Self::classify(serde_json::from_str::<Envelope<Box<RawValue>>>(text).map_err(error)?),
        }
    }

    /// Classifies an envelope whose result was read as text.
    fn classify(mut env: Envelope<'_, Box<RawValue>>) -> Result<Message, DecodeError> {
        // `"result": null` counts as absent, as it did when results were parsed.
        let result = env.result.take().filter(|r| r.get() != "null").map(Raw::from);
        Self::classify_with(env, result)
    }

    /// Classifies an envelope, its result (if any) given apart (what the
    /// envelope holds of it is not read).
    fn classify_with<R>(env: Envelope<'_, R>, result: Option<Raw>) -> Result<Message, DecodeError> {
        let id = match env.id {
            None => None,
            Some(raw) => {
                Some(Id::validate_borrowed(raw).map_err(|r| DecodeError::Invalid { id: None, reason: r.into() })?)
            }
        };
        let invalid = |reason: &str| DecodeError::Invalid { id: id.clone(), reason: reason.into() };
        match env.jsonrpc.map(RawValue::get) {
            Some("\"2.0\"") => {}
            _ => return Err(invalid("\"jsonrpc\" must be \"2.0\"")),
        }
        if let Some(p) = &env.params
            && !(p.is_object() || p.is_array())
        {
            return Err(invalid("\"params\" must be an object or an array"));
        }
        match (env.method, result, env.error) {
            (Some(method), None, None) => Ok(match id {
                Some(id) => Message::Request(Request { id, method, params: env.params }),
                None => Message::Notification(Notification { method, params: env.params }),
            }),
            (None, Some(result), None) => match id {
                Some(id) => Ok(Message::Response(Response { id: Some(id), outcome: Outcome::Prepared(result) })),
                None => Err(invalid("a result needs an id")),
            },
            (None, None, Some(error)) => {
                if !error.is_object() {
                    return Err(invalid("\"error\" must be an object"));
                }
                Ok(Message::Response(Response { id, outcome: Outcome::Error(error) }))
            }
            _ => Err(invalid("a message needs exactly one of \"method\", \"result\" or \"error\"")),
        }
    }

    /// Encodes the message as compact JSON on one line, as stdio requires.
    ///
    /// A result held as text is written around as it is, put on one line
    /// ([`one_line`]): a pretty-printed answer over HTTP has line breaks.
    pub fn encode(&self) -> String {
        match self {
            Message::Response(Response { id: Some(id), outcome: Outcome::Prepared(raw) }) => {
                let mut text =
                    String::with_capacity(PREPARED_HEAD.len() + PREPARED_RESULT.len() + raw.get().len() + 24);
                for part in [PREPARED_HEAD, id.as_json(), PREPARED_RESULT, raw.get(), "}"] {
                    text.push_str(part);
                }
                // Only text held as it came can have a line break.
                one_line(&mut text);
                text
            }
            // serde_json writes no line break (and a message with an id-less
            // result is not one).
            _ => serde_json::to_string(self).expect("messages always serialize"),
        }
    }

    /// The message as a [`Value`].
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("messages always serialize")
    }

    /// The method of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("jsonrpc", "2.0")?;
        match self {
            Message::Request(r) => {
                m.serialize_entry("id", &r.id)?;
                m.serialize_entry("method", &r.method)?;
                if let Some(p) = &r.params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Notification(n) => {
                m.serialize_entry("method", &n.method)?;
                if let Some(p) = &n.params {
                    m.serialize_entry("params", p)?;
                }
            }
            Message::Response(r) => {
                match &r.id {
                    Some(id) => m.serialize_entry("id", id)?,
                    None => m.serialize_entry("id", &Value::Null)?,
                }
                match &r.outcome {
                    Outcome::Result(v) => m.serialize_entry("result", v)?,
                    Outcome::Prepared(raw) => m.serialize_entry("result", raw)?,
                    Outcome::Error(e) => m.serialize_entry("error", e)?,
                }
            }
        }
        m.end()
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

impl Notification {
    /// A notification with the given method and params.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Self { method: method.into(), params }
    }
}

impl Response {
    /// A successful response.
    pub fn result(id: Id, result: Value) -> Self {
        Self { id: Some(id), outcome: Outcome::Result(result) }
    }

    /// An error response.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Self { id, outcome: Outcome::error(error) }
    }
}

/// A message body as read off the wire: one message, or a JSON-RPC batch
/// (an array of messages, part of the 2025-03-26 revision). This is the one
/// decoder of every leg; whether a batch is acceptable there, and what
/// becomes of a bad element, is the caller's policy.
#[derive(Debug)]
pub enum Body {
    Single(Message),
    /// The elements in order, each decoded on its own, so one bad element
    /// does not spoil the others.
    Batch(Vec<Result<Message, DecodeError>>),
}

impl Body {
    /// Decodes a body. An array is a batch (an empty one is invalid); an
    /// element that is not a message stays in the batch as its error.
    pub fn decode(bytes: &[u8]) -> Result<Body, DecodeError> {
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'[') {
            return Message::decode(bytes).map(Body::Single);
        }
        // Elements stay JSON text until each is decoded, so a proxied result
        // in a batch is not parsed into a tree either.
        let items: Vec<&RawValue> = from_json(bytes).map_err(|e| {
            if e.is_syntax() || e.is_eof() {
                DecodeError::Parse(e)
            } else {
                DecodeError::Invalid { id: None, reason: e.to_string() }
            }
        })?;
        if items.is_empty() {
            return Err(DecodeError::Invalid { id: None, reason: "an empty batch".into() });
        }
        Ok(Body::Batch(items.iter().map(|raw| Message::decode_element(raw.get())).collect()))
    }

    /// The messages of the body; elements that did not decode go to `bad`.
    /// An iterator, not a list: the usual body is one message, and a list
    /// of it would cost an allocation per message read.
    pub fn into_messages<F: FnMut(DecodeError)>(self, bad: F) -> Messages<F> {
        match self {
            Body::Single(m) => Messages { single: Some(m), batch: Vec::new().into_iter(), bad },
            Body::Batch(items) => Messages { single: None, batch: items.into_iter(), bad },
        }
    }
}

/// The messages of a [`Body`] ([`Body::into_messages`]).
pub struct Messages<F> {
    single: Option<Message>,
    batch: std::vec::IntoIter<Result<Message, DecodeError>>,
    bad: F,
}

impl<F: FnMut(DecodeError)> Iterator for Messages<F> {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        if let Some(m) = self.single.take() {
            return Some(m);
        }
        for item in self.batch.by_ref() {
            match item {
                Ok(m) => return Some(m),
                Err(e) => (self.bad)(e),
            }
        }
        None
    }
}

/// Parses JSON `bytes`: as text once they are checked to be UTF-8, which
/// spares checking each string again as it is read (what parsing bytes
/// does); bytes that are not UTF-8 are parsed as bytes, for the same error.
fn from_json<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// Reads `params._meta.progressToken`, if the request carries one.
pub fn progress_token(params: Option<&Value>) -> Option<&Value> {
    member(member(params?, "_meta")?, "progressToken")
}

/// `value`'s member `key`, if `value` is an object that has it (as
/// [`Value::get`]). A short object (a request's params, its `_meta`) is
/// scanned: comparing a handful of keys costs less than hashing one, and
/// serde_json's maps hash keys with SipHash. Used where a call looks up
/// params on its way through.
#[inline]
pub fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    let map = value.as_object()?;
    if map.len() <= SCANNED_MEMBERS { map.iter().find_map(|(k, v)| (k == key).then_some(v)) } else { map.get(key) }
}

/// [`member`], to change: the value of `key` in `value`, an object.
#[inline]
pub fn member_mut<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let map = value.as_object_mut()?;
    if map.len() <= SCANNED_MEMBERS {
        map.iter_mut().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        map.get_mut(key)
    }
}

/// Up to how many members [`member`] scans instead of hashing.
const SCANNED_MEMBERS: usize = 8;

/// Sets `params._meta.progressToken`, creating `params` and `_meta` as needed.
pub fn set_progress_token(params: &mut Option<Value>, token: Value) {
    let params = params.get_or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = params {
        let meta = p.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = meta {
            m.insert("progressToken".into(), token);
        }
    }
}

#[cfg(test)]
mod tests;
