//! Secrets at rest in Redis: AES-256-GCM under the key ring of `[state]
//! encryption_keys` (the first key seals, every key opens, so a new key can
//! be rotated in before the old one is dropped).
//!
//! A sealed value is `v1.<key id>.<base64(nonce ‖ ciphertext ‖ tag)>`, where
//! the key id is the first 8 hex digits of the key's SHA-256: the right key
//! is found without trying each. The Redis key the value is stored under is
//! the associated data, so a value copied to another key does not open.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Bytes of an AES-256 key.
const KEY_BYTES: usize = 32;
/// Bytes of a GCM nonce.
const NONCE_BYTES: usize = 12;

/// Why a key from the configuration cannot be used. Never shows the key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("is not base64 (expected 32 random bytes, base64-encoded: `openssl rand -base64 32`)")]
    NotBase64,
    #[error("decodes to {0} bytes; an AES-256 key is 32 (`openssl rand -base64 32`)")]
    WrongLength(usize),
}

/// One AES-256-GCM key and its id.
pub struct Key {
    id: String,
    cipher: Aes256Gcm,
}

impl Key {
    /// A key from its base64 text.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let bytes = STANDARD.decode(text.trim()).map_err(|_| KeyError::NotBase64)?;
        if bytes.len() != KEY_BYTES {
            return Err(KeyError::WrongLength(bytes.len()));
        }
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &bytes);
        let id = hex::encode(&digest.as_ref()[..4]);
        let cipher = Aes256Gcm::new_from_slice(&bytes).map_err(|_| KeyError::WrongLength(bytes.len()))?;
        Ok(Self { id, cipher })
    }
}

/// The key ring: the first key seals, all open.
pub struct KeyRing(Vec<Key>);

impl KeyRing {
    /// The ring of `keys` (base64 texts, checked by validation); `None`
    /// without any, when nothing secret may be stored.
    pub fn new<'a>(keys: impl IntoIterator<Item = &'a str>) -> Result<Option<Self>, KeyError> {
        let keys = keys.into_iter().map(Key::parse).collect::<Result<Vec<_>, _>>()?;
        Ok((!keys.is_empty()).then_some(Self(keys)))
    }

    /// `plain` sealed for storage under `place` (its Redis key).
    pub fn seal(&self, place: &str, plain: &[u8]) -> String {
        let key = &self.0[0];
        let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
        // Encryption fails only on inputs of gigabytes.
        let sealed = key.cipher.encrypt(&nonce, Payload { msg: plain, aad: place.as_bytes() }).unwrap_or_default();
        let mut out = Vec::with_capacity(NONCE_BYTES + sealed.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        format!("v1.{}.{}", key.id, STANDARD.encode(out))
    }

    /// The plain bytes of `sealed` stored under `place`, or `None` if no key
    /// of the ring opens it (rotated out, tampered with, moved).
    pub fn open(&self, place: &str, sealed: &str) -> Option<Vec<u8>> {
        let mut parts = sealed.splitn(3, '.');
        let (Some("v1"), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next()) else { return None };
        let key = self.0.iter().find(|k| k.id == id)?;
        let bytes = STANDARD.decode(body).ok()?;
        if bytes.len() < NONCE_BYTES {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        key.cipher.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: place.as_bytes() }).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> String {
        STANDARD.encode([byte; KEY_BYTES])
    }

    #[test]
    fn what_is_sealed_opens_under_its_place_only_and_hides_the_plain_text() {
        let ring = KeyRing::new([key(1).as_str()]).unwrap().unwrap();
        let sealed = ring.seal("toolgate:x:1", b"the-token");
        assert!(!sealed.contains("the-token"), "{sealed}");
        assert_eq!(ring.open("toolgate:x:1", &sealed).as_deref(), Some(&b"the-token"[..]));
        assert_eq!(ring.open("toolgate:x:2", &sealed), None, "moved to another key");
        let mut tampered = sealed.clone();
        tampered.pop();
        tampered.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert_eq!(ring.open("toolgate:x:1", &tampered), None);
    }

    #[test]
    fn a_rotated_ring_opens_what_the_old_key_sealed() {
        let old = KeyRing::new([key(1).as_str()]).unwrap().unwrap();
        let sealed = old.seal("k", b"secret");
        let rotated = KeyRing::new([key(2).as_str(), key(1).as_str()]).unwrap().unwrap();
        assert_eq!(rotated.open("k", &sealed).as_deref(), Some(&b"secret"[..]));
        let resealed = rotated.seal("k", b"secret");
        assert_eq!(old.open("k", &resealed), None, "the new key seals; the old ring cannot open it");
    }

    #[test]
    fn bad_keys_are_refused_without_echoing_them() {
        assert!(matches!(Key::parse("not base64!"), Err(KeyError::NotBase64)));
        let short = STANDARD.encode([7u8; 16]);
        let e = Key::parse(&short).err().unwrap();
        assert!(matches!(e, KeyError::WrongLength(16)));
        assert!(!e.to_string().contains(&short));
        assert!(KeyRing::new([]).unwrap().is_none());
    }
}
