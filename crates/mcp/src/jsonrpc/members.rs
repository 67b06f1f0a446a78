//! Small values as JSON text, for what rewrites a result as text (see
//! [`super::Object`]) to add.

use serde::Serialize;
use serde_json::value::RawValue;

/// `value` as raw JSON (numbers, strings, small constants the rewriters
/// add, the server's identity); `{}` in the impossible case it cannot be
/// written.
pub(crate) fn raw<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| {
        serde_json::value::to_raw_value(&serde_json::Map::new()).expect("an empty object is written")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_json() {
        assert_eq!(raw("x\"y").get(), r#""x\"y""#);
        assert_eq!(raw(&7).get(), "7");
        assert_eq!(raw(&serde_json::json!({"a": [1]})).get(), r#"{"a":[1]}"#);
    }
}
