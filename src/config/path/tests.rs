use super::TomlPath;

#[test]
fn formats_keys_indexes_and_quoted_keys() {
    let p = TomlPath::root().key("upstream").index(2).key("tools").key("read.file").key("description");
    assert_eq!(p.to_string(), r#"upstream[2].tools."read.file".description"#);
    assert_eq!(TomlPath::root().key("server").key("listen").to_string(), "server.listen");
    assert_eq!(TomlPath::root().key("").to_string(), r#""""#);
    assert_eq!(TomlPath::root().key("a\"b").to_string(), r#""a\"b""#);
    assert_eq!(TomlPath::root().to_string(), "(top level)");
}
