//! Static embeddings: a text's vector is the sum of the table rows of its
//! WordPiece tokens, L2-normalized. The table (`data/static.bin`) and the
//! tokenizer (`data/tokenizer.json`) are compiled in; `data/README.md` says
//! how they were made and from what.

use crate::analysis::words;
use std::collections::HashMap;
use std::sync::OnceLock;
use tokenizers::Tokenizer;

/// Dimensions of a vector.
pub const DIMS: usize = 256;

/// Tokens of a text that count: the first 256 (the model's input length).
pub const MAX_TOKENS: usize = 256;

static TABLE: &[u8] = include_bytes!("../data/static.bin");
static TOKENIZER: &[u8] = include_bytes!("../data/tokenizer.json");

/// The table and the tokenizer, read once per process.
pub(crate) struct Model {
    tokenizer: Tokenizer,
    /// One scale per row.
    scales: Vec<f32>,
    /// Rows of `DIMS` int8 values (as bytes), borrowed from the binary.
    values: &'static [u8],
}

/// The process's model, read from the compiled-in data on first use.
pub(crate) fn model() -> &'static Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL.get_or_init(|| Model::parse(TABLE, TOKENIZER))
}

impl Model {
    /// Reads `static.bin` (magic `TGST`, u32 version 1, u32 rows, u32 dims,
    /// rows × f32 scales, rows × dims i8; little-endian) and the tokenizer.
    /// The data is part of the crate, so a malformed file is a build defect: panics.
    fn parse(table: &'static [u8], tokenizer: &[u8]) -> Model {
        let word = |i: usize| u32::from_le_bytes(table[4 + 4 * i..8 + 4 * i].try_into().expect("4 bytes"));
        assert!(table.len() >= 16 && &table[..4] == b"TGST" && word(0) == 1, "data/static.bin: not a version 1 table");
        let (rows, dims) = (word(1) as usize, word(2) as usize);
        assert_eq!(dims, DIMS, "data/static.bin: dimensions");
        let values_at = 16 + 4 * rows;
        assert_eq!(table.len(), values_at + rows * dims, "data/static.bin: size");
        let scales =
            table[16..values_at].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
        let mut tokenizer = Tokenizer::from_bytes(tokenizer).expect("data/tokenizer.json parses");
        // The file pads to 128 tokens and truncates at 128: neither applies here.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).expect("no truncation");
        let model = Model { tokenizer, scales, values: &table[values_at..] };
        assert_eq!(model.tokenizer.get_vocab_size(true), rows, "data/static.bin: one row per token");
        model
    }

    /// The WordPiece ids of `text`'s identifier-split words joined by spaces,
    /// without special tokens, the first [`MAX_TOKENS`] only.
    pub(crate) fn ids(&self, text: &str) -> Vec<u32> {
        let mut ids = self.encode(&words(text).join(" "));
        ids.truncate(MAX_TOKENS);
        ids
    }

    /// [`ids`](Self::ids), each word's pieces looked up in `cache` (or encoded
    /// and kept there). The same ids: the tokenizer splits at whitespace before
    /// WordPiece, and a word of letters and digits has nothing else to split.
    pub(crate) fn ids_cached(&self, text: &str, cache: &mut HashMap<String, Vec<u32>>) -> Vec<u32> {
        let mut ids = Vec::new();
        for word in words(text) {
            if ids.len() >= MAX_TOKENS {
                break;
            }
            let pieces = match cache.get(&word) {
                Some(pieces) => pieces,
                None => cache.entry(word).or_insert_with_key(|w| self.encode(w)),
            };
            ids.extend_from_slice(pieces);
        }
        ids.truncate(MAX_TOKENS);
        ids
    }

    fn encode(&self, text: &str) -> Vec<u32> {
        match self.tokenizer.encode_fast(text, false) {
            Ok(encoding) => encoding.get_ids().to_vec(),
            Err(_) => Vec::new(),
        }
    }

    /// The unit vector of `text` (all zeros when it has no tokens).
    pub(crate) fn embed(&self, text: &str) -> [f32; DIMS] {
        self.embed_ids(&self.ids(text))
    }

    /// The unit vector of the tokens `ids` (all zeros when there are none).
    pub(crate) fn embed_ids(&self, ids: &[u32]) -> [f32; DIMS] {
        let mut v = [0f32; DIMS];
        for &id in ids {
            let id = id as usize;
            let (Some(&scale), Some(row)) = (self.scales.get(id), self.values.get(id * DIMS..(id + 1) * DIMS)) else {
                continue;
            };
            for (x, &q) in v.iter_mut().zip(row) {
                *x += scale * f32::from(q as i8);
            }
        }
        let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt().max(1e-12);
        for x in &mut v {
            *x = (f64::from(*x) / norm) as f32;
        }
        v
    }
}

/// The dot product of two vectors (eight partial sums, so it vectorizes).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum()
}

#[cfg(test)]
mod tests;
