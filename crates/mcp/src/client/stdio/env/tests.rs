use super::*;

#[test]
fn basic_variables_pass_and_others_do_not() {
    for key in BASIC {
        assert!(passes(key, "x"), "{key}");
    }
    for key in ["AWS_SECRET_ACCESS_KEY", "GITHUB_PAT", "TOOLGATE_CONFIG", "NODE_OPTIONS", "PYTHONPATH", "npm_config"] {
        assert!(!passes(key, "x"), "{key}");
    }
}

#[test]
fn package_manager_settings_pass() {
    for (key, value) in [
        ("NPM_CONFIG_UPDATE_NOTIFIER", "false"),
        ("npm_config_update_notifier", "false"),
        ("NPM_CONFIG_CACHE", "/home/toolgate/.npm"),
        ("NPM_CONFIG_REGISTRY", "https://npm.mirror.example/"),
        ("NPM_CONFIG_FUND", "false"),
        ("npm_config_https_proxy", "http://proxy.example:3128"),
        ("UV_CACHE_DIR", "/home/toolgate/.cache/uv"),
        ("UV_TOOL_DIR", "/home/toolgate/.local/share/uv/tools"),
        ("UV_INDEX_URL", "https://pypi.mirror.example/simple"),
        ("UV_PYTHON_DOWNLOADS", "never"),
        ("XDG_CACHE_HOME", "/home/toolgate/.cache"),
        ("XDG_DATA_HOME", "/home/toolgate/.local/share"),
    ] {
        assert!(passes(key, value), "{key}={value}");
    }
}

#[test]
fn credentials_stay_behind() {
    for (key, value) in [
        // npm's own credential settings, in both spellings.
        ("NPM_CONFIG__AUTH", "dXNlcjpwYXNz"),
        ("npm_config__authToken", "npm_abc"),
        ("NPM_CONFIG__PASSWORD", "cGFzcw=="),
        ("npm_config_//registry.npmjs.org/:_authToken", "npm_abc"),
        ("NPM_CONFIG_//npm.pkg.github.com/:_authToken", "ghp_abc"),
        ("npm_config_@myco:registry", "https://npm.myco.example/"),
        ("NPM_CONFIG_KEY", "-----BEGIN PRIVATE KEY-----"),
        ("NPM_CONFIG_KEYFILE", "/secrets/client.key"),
        ("NPM_CONFIG_CERT", "-----BEGIN CERTIFICATE-----"),
        ("NPM_CONFIG_OTP", "123456"),
        ("NPM_CONFIG_USERNAME", "me"),
        ("NPM_CONFIG_EMAIL", "me@example.com"),
        // uv's.
        ("UV_PUBLISH_TOKEN", "pypi-abc"),
        ("UV_PUBLISH_PASSWORD", "pw"),
        ("UV_INDEX_INTERNAL_USERNAME", "me"),
        ("UV_INDEX_INTERNAL_PASSWORD", "pw"),
        ("UV_GITHUB_TOKEN", "ghp_abc"),
        ("UV_KEYRING_PROVIDER", "subprocess"),
        // A password inside a URL, whatever the setting is called.
        ("NPM_CONFIG_REGISTRY", "https://me:pw@npm.mirror.example/"),
        ("npm_config_https_proxy", "http://me:pw@proxy.example:3128"),
        ("UV_INDEX_URL", "https://me:token@pypi.mirror.example/simple"),
        ("UV_INDEX", "internal=https://__token__:abc@pypi.myco.example/simple"),
        ("UV_EXTRA_INDEX_URL", "https://a.example/simple https://me:pw@b.example/simple"),
        ("XDG_CACHE_HOME", "https://me:pw@x.example/"),
        // A bare prefix is no setting.
        ("UV_", "x"),
    ] {
        assert!(!passes(key, value), "{key}={value}");
    }
}

#[test]
fn urls_without_a_user_part_are_not_credentials() {
    assert!(!has_url_credentials("https://registry.npmjs.org/"));
    assert!(!has_url_credentials("https://example.com/path?mail=a@b.example"));
    assert!(!has_url_credentials("not a url, me@example.com"));
    assert!(has_url_credentials("https://me@example.com/"));
    assert!(has_url_credentials("x=https://a:b@c.example"));
}
