//! A body gathered from the chunks it arrived in.
//!
//! The usual JSON body (a request, an upstream's answer) arrives as one
//! chunk, which is kept as it came: no buffer is allocated and nothing is
//! copied. Only a second chunk starts a buffer holding them all. (A
//! `BytesMut` filled chunk by chunk, or http-body-util's `collect`, costs an
//! allocation and a copy even for one chunk.)

use bytes::{Bytes, BytesMut};

/// The chunks of a body read so far.
#[derive(Debug, Default)]
pub enum Chunks {
    /// Nothing yet (or only empty chunks).
    #[default]
    Empty,
    /// One chunk, as it came.
    One(Bytes),
    /// Several, copied into one buffer.
    Many(BytesMut),
}

impl Chunks {
    /// Adds the next chunk.
    pub fn push(&mut self, chunk: Bytes) {
        if chunk.is_empty() {
            return;
        }
        *self = match std::mem::take(self) {
            Chunks::Empty => Chunks::One(chunk),
            Chunks::One(first) => {
                let mut all = BytesMut::with_capacity(first.len() + chunk.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&chunk);
                Chunks::Many(all)
            }
            Chunks::Many(mut all) => {
                all.extend_from_slice(&chunk);
                Chunks::Many(all)
            }
        };
    }

    /// Bytes gathered so far.
    pub fn len(&self) -> usize {
        match self {
            Chunks::Empty => 0,
            Chunks::One(b) => b.len(),
            Chunks::Many(b) => b.len(),
        }
    }

    /// Whether nothing was gathered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole body.
    pub fn into_bytes(self) -> Bytes {
        match self {
            Chunks::Empty => Bytes::new(),
            Chunks::One(b) => b,
            Chunks::Many(b) => b.freeze(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chunk_is_kept_as_it_came() {
        let chunk = Bytes::from(b"{\"jsonrpc\":\"2.0\"}".to_vec());
        let at = chunk.as_ptr();
        let mut body = Chunks::default();
        body.push(Bytes::new());
        body.push(chunk);
        body.push(Bytes::new());
        assert_eq!(body.len(), 17);
        let bytes = body.into_bytes();
        // The same memory: not copied.
        assert_eq!(bytes.as_ptr(), at);
        assert_eq!(&bytes[..], b"{\"jsonrpc\":\"2.0\"}");
    }

    #[test]
    fn several_chunks_are_joined_in_order() {
        let mut body = Chunks::default();
        assert!(body.is_empty());
        for part in ["{\"a\"", ":", "1", "}"] {
            body.push(Bytes::from(part));
        }
        assert_eq!(body.len(), 7);
        assert_eq!(&body.into_bytes()[..], b"{\"a\":1}");
        assert_eq!(Chunks::default().into_bytes(), Bytes::new());
    }
}
