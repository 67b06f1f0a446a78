//! State that replicas share through the Redis of `[state]`: the
//! connection ([`connection`]), client sessions ([`sessions`], records laid
//! out in [`record`], each live one tied to its record by a [`link`]), and the messages replicas route to each other over
//! pub/sub ([`bus`]), some of them request/answer exchanges ([`exchange`]).
//!
//! Redis is the only thing replicas share: none of them talks to another
//! directly, and none needs to know how many there are.

pub mod bus;
pub mod connection;
pub mod exchange;
pub mod link;
pub mod record;
pub mod sessions;

pub use bus::{BusMessage, Inbound};
pub use connection::{Connection, OpenError, Query, STORE_TIMEOUT, Unavailable};
pub use exchange::{ExchangeError, Exchanges, Waiting};
pub use link::SessionLink;
pub use record::Record;
pub use sessions::{Refresh, SharedSessions};
