//! Counting tokens with a real tokenizer.

use serde_json::Value;
use tiktoken_rs::CoreBPE;

/// The encoding every count uses: OpenAI's `o200k_base` (GPT-4o and later),
/// from `tiktoken-rs`, which embeds its data.
pub const ENCODING: &str = "o200k_base";

/// The tokenizer, loaded once per process (loading parses the embedded
/// vocabulary, which takes tens of milliseconds).
fn bpe() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// The number of [`ENCODING`] tokens of `text`. Special-token markers such as
/// `<|endoftext|>` count as ordinary text, as they would inside a tool
/// description.
pub fn count_text(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

/// The tokens of `value` serialized as compact JSON (no whitespace between
/// tokens, keys in their stored order), the way clients send JSON to a model
/// API.
pub fn count_json(value: &Value) -> usize {
    count_text(&value.to_string())
}
