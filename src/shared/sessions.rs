//! Client sessions in Redis (`[state] sessions = "shared"`): records that
//! any replica may adopt, kept alive by use and ended everywhere at once.
//!
//! Keys, under `[state] session_prefix` (`toolgate:session:` by default):
//! - `<prefix><id>`: the session's record, one hash ([`super::record`]),
//!   whose time to live is `session_idle_timeout`, started over on use (at
//!   most once a second per session and replica).
//! - `<prefix>gone:<id>`: a tombstone a `DELETE` leaves for one idle
//!   timeout, so that no replica writes an ended session back.
//!
//! Session ids are 32 lowercase hexadecimal digits, and an id of any other
//! form is refused before a key is made of it
//! ([`SessionStore::is_issued_form`](crate::server::SessionStore::is_issued_form)):
//! so no id names a tombstone, or any key but a record's.
//!
//! Every write goes through one Lua script, so that a write never revives an
//! ended session and an update never creates half a record: it answers
//! whether the session was ended (the tombstone), is missing (expired, or
//! lost with Redis's data: the caller writes it back whole) or was kept.
//!
//! Channels (pub/sub), under the same prefix: `<prefix>bus`, which every
//! replica hears (sessions ended, cancellations), and `<prefix>replica:<id>`,
//! which only that replica hears (answers and notifications routed to it);
//! see [`super::bus`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::bus::BusMessage;
use super::connection::{Connection, Unavailable};
use super::exchange::{ExchangeError, Exchanges, Waiting};
use super::record::{self, Record};

/// Writes fields of a session's record, or removes some, unless the
/// session ended.
///
/// KEYS: the record, its tombstone, and optionally its client's slots (see
/// [`SLOT`]). ARGV: the TTL in ms, then `1` to write the whole record
/// (create, write back), `0` to update one that exists or `d` to remove
/// fields of one that exists, then the fields (field, value, … to write;
/// field, … to remove).
/// Answers -1 (ended), 0 (missing: nothing written), 1 (written; TTL set,
/// and the session's slot, if it holds one, lives as long).
const WRITE: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 2 then
  if ARGV[2] == 'd' then redis.call('HDEL', KEYS[1], unpack(ARGV, 3))
  else redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if KEYS[3] then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if redis.call('ZADD', KEYS[3], 'XX', 'CH', now + tonumber(ARGV[1]), KEYS[1]) > 0 then
    redis.call('PEXPIRE', KEYS[3], ARGV[1])
  end
end
return 1
";

/// Takes one of a client's `max_sessions` slots, counted across replicas:
/// a sorted set per client of its sessions' record keys, each scored with
/// when it expires (its record's time, which [`WRITE`] starts over with
/// the record's). Expired slots are dropped first; a session that holds a
/// slot already keeps it.
///
/// KEYS: the client's slots. ARGV: the TTL in ms, the most slots, the
/// session's record key. Answers 1 (taken) or 0 (the client holds them all).
const SLOT: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
";

/// Reads a session's record: its fields, or none when the key holds no
/// hash. Ids are checked before they get here, so no key of another type
/// should ever be named; should one be, it reads as no record, never as an
/// error of the store.
///
/// KEYS: the record.
const LOAD: &str = r"
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return {} end
return redis.call('HGETALL', KEYS[1])
";

/// What a write or refresh found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refresh {
    /// The record is there (and its time starts over).
    Kept,
    /// No record: it expired, or Redis lost it. Write it back whole.
    Missing,
    /// The client ended the session (`DELETE`, on any replica).
    Ended,
}

/// What [`WRITE`] does with the fields it is given.
#[derive(Clone, Copy)]
enum Write {
    /// Writes them, creating the record if it is missing.
    Whole,
    /// Writes them into the record, if it is there.
    Update,
    /// Removes them from the record, if it is there.
    Remove,
}

/// Field, value, field, value, …: the arguments of a write.
fn pairs(fields: &[(String, String)]) -> Vec<&str> {
    fields.iter().flat_map(|(field, value)| [field.as_str(), value.as_str()]).collect()
}

/// The shared sessions of one replica.
pub struct SharedSessions {
    connection: Arc<Connection>,
    prefix: String,
    ttl_ms: u64,
    /// This replica's id: its channel, and the tag of its requests to clients.
    replica: Arc<str>,
    write: redis::Script,
    load: redis::Script,
    slot: redis::Script,
    /// This replica's exchanges waiting for replies from others.
    exchanges: Arc<Exchanges>,
}

impl SharedSessions {
    /// Sessions under `prefix` that expire after `idle` without use, for
    /// replica `replica`.
    pub fn new(connection: Arc<Connection>, prefix: &str, idle: Duration, replica: Arc<str>) -> Self {
        Self {
            connection,
            prefix: prefix.to_owned(),
            ttl_ms: u64::try_from(idle.as_millis()).unwrap_or(u64::MAX).max(1),
            replica,
            write: redis::Script::new(WRITE),
            load: redis::Script::new(LOAD),
            slot: redis::Script::new(SLOT),
            exchanges: Arc::new(Exchanges::default()),
        }
    }

    /// This replica's id.
    pub fn replica(&self) -> &Arc<str> {
        &self.replica
    }

    /// The connection (for the bus).
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }

    /// The key of session `id`'s record.
    pub fn key(&self, id: &str) -> String {
        format!("{}{id}", self.prefix)
    }

    fn tombstone(&self, id: &str) -> String {
        format!("{}gone:{id}", self.prefix)
    }

    /// The key of the `max_sessions` slots of the client `caller`.
    fn slots(&self, caller: &str) -> String {
        format!("{}slots:{caller}", self.prefix)
    }

    /// Takes one of `caller`'s `max` session slots for session `id`, counted
    /// across replicas; `false` when the client holds them all. The slot
    /// lives as long as the session's record, and goes with [`Self::end`].
    pub async fn take_slot(&self, caller: &str, id: &str, max: u32) -> Result<bool, Unavailable> {
        let mut invocation = self.slot.key(self.slots(caller));
        invocation.arg(self.ttl_ms).arg(max).arg(self.key(id));
        self.connection.query::<i64>(invocation).await.map(|taken| taken == 1)
    }

    /// The channel every replica hears.
    pub fn bus_channel(&self) -> String {
        format!("{}bus", self.prefix)
    }

    /// The channel only `replica` hears.
    pub fn replica_channel(&self, replica: &str) -> String {
        format!("{}replica:{replica}", self.prefix)
    }

    async fn write(&self, id: &str, caller: Option<&str>, mode: Write, args: &[&str]) -> Result<Refresh, Unavailable> {
        let mut invocation = self.write.key(self.key(id));
        let mode = match mode {
            Write::Whole => "1",
            Write::Update => "0",
            Write::Remove => "d",
        };
        invocation.key(self.tombstone(id));
        if let Some(caller) = caller {
            invocation.key(self.slots(caller));
        }
        invocation.arg(self.ttl_ms).arg(mode);
        for arg in args {
            invocation.arg(*arg);
        }
        let answer: i64 = self.connection.query(invocation).await?;
        Ok(match answer {
            1 => Refresh::Kept,
            0 => Refresh::Missing,
            _ => Refresh::Ended,
        })
    }

    /// Records a new session, or writes a live one back whole (fields are
    /// added to what is there: grants another replica recorded stay).
    pub async fn put(&self, id: &str, record: &Record) -> Result<Refresh, Unavailable> {
        self.write(id, Some(&record.caller), Write::Whole, &pairs(&record.fields())).await
    }

    /// Updates fields of a session's record, if it is there.
    pub async fn update(&self, id: &str, fields: &[(String, String)]) -> Result<Refresh, Unavailable> {
        self.write(id, None, Write::Update, &pairs(fields)).await
    }

    /// Removes fields of a session's record, if it is there.
    pub async fn remove(&self, id: &str, fields: &[String]) -> Result<Refresh, Unavailable> {
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        self.write(id, None, Write::Remove, &fields).await
    }

    /// Starts the time of a session's record over, if it is there (and of
    /// its `max_sessions` slot, if `caller` holds one for it).
    pub async fn refresh(&self, id: &str, caller: &str) -> Result<Refresh, Unavailable> {
        self.write(id, Some(caller), Write::Update, &[]).await
    }

    /// The record of session `id`, if there is one.
    pub async fn load(&self, id: &str) -> Result<Option<Record>, Unavailable> {
        let fields: HashMap<String, String> = self.connection.query(self.load.key(self.key(id))).await?;
        Ok(Record::from_fields(fields))
    }

    /// The fingerprint session `id` holds a grant for `tool` with, if any.
    pub async fn grant_of(&self, id: &str, tool: &str) -> Result<Option<u64>, Unavailable> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.key(id)).arg(record::grant_field(tool));
        let held: Option<String> = self.connection.query(cmd).await?;
        Ok(held.and_then(|f| f.parse().ok()))
    }

    /// The values of `fields` of session `id`'s record (each `None` where
    /// the field, or the record, is missing).
    pub async fn fields(&self, id: &str, fields: &[String]) -> Result<Vec<Option<String>>, Unavailable> {
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.key(id)).arg(fields);
        self.connection.query(cmd).await
    }

    /// Ends session `id` of `caller` everywhere: its record and its
    /// `max_sessions` slot go, a tombstone stays for one idle timeout, and
    /// every replica hears of it.
    pub async fn end(&self, id: &str, caller: &str) -> Result<(), Unavailable> {
        let mut pipe = redis::pipe();
        pipe.cmd("DEL").arg(self.key(id)).ignore();
        pipe.cmd("ZREM").arg(self.slots(caller)).arg(self.key(id)).ignore();
        pipe.cmd("SET").arg(self.tombstone(id)).arg("1").arg("PX").arg(self.ttl_ms).ignore();
        let ended = BusMessage::Ended { session: id.to_owned(), from: self.replica.to_string() };
        pipe.cmd("PUBLISH").arg(self.bus_channel()).arg(ended.encode()).ignore();
        self.connection.query::<()>(pipe).await
    }

    /// Sends `message` to every replica. Returns how many heard it.
    pub async fn broadcast(&self, message: &BusMessage) -> Result<u64, Unavailable> {
        self.publish(self.bus_channel(), message).await
    }

    /// Sends `message` to `replica` only. Returns whether it heard it (it
    /// is gone otherwise).
    pub async fn send_to(&self, replica: &str, message: &BusMessage) -> Result<bool, Unavailable> {
        Ok(self.publish(self.replica_channel(replica), message).await? > 0)
    }

    /// Asks `replica` `call` (a [`BusMessage::Call`]); its replies come to
    /// the returned exchange. [`ExchangeError::Gone`] when no one heard it.
    pub async fn ask(&self, replica: &str, call: Value) -> Result<Waiting, ExchangeError> {
        let waiting = self.exchanges.open();
        let message = BusMessage::Call { id: waiting.id().to_owned(), from: self.replica.to_string(), call };
        if self.send_to(replica, &message).await? { Ok(waiting) } else { Err(ExchangeError::Gone) }
    }

    /// Replies `reply` to the exchange `id` of replica `to`. Returns whether
    /// it heard it (it is gone otherwise).
    pub async fn reply(&self, to: &str, id: &str, reply: Value) -> Result<bool, Unavailable> {
        let message = BusMessage::Reply { id: id.to_owned(), from: self.replica.to_string(), reply };
        self.send_to(to, &message).await
    }

    /// A reply another replica sent: to the exchange waiting for it, if any.
    pub fn replied(&self, id: &str, reply: Value) -> bool {
        self.exchanges.deliver(id, reply)
    }

    async fn publish(&self, channel: String, message: &BusMessage) -> Result<u64, Unavailable> {
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(channel).arg(message.encode());
        self.connection.query(cmd).await
    }
}

#[cfg(test)]
mod tests;
