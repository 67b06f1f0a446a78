use proptest::prelude::*;
use serde_json::json;

use super::*;

fn tool(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("test tools are objects")
}

/// The first sentence of a description, as `minimal_description` derives
/// it with limit 160 (before a short one gets its second sentence, see
/// `a_short_first_sentence_gets_the_next_one`).
fn short(description: &str) -> String {
    match first_sentence(description, 160 + 256) {
        Some(sentence) => shorten(&sentence, 160),
        None => minimal_description(&tool(json!({"name": "t", "description": description})), 160),
    }
}

#[test]
fn a_short_first_sentence_gets_the_next_one() {
    let with =
        |description: &str, limit| minimal_description(&tool(json!({"name": "t", "description": description})), limit);
    // Short first sentences: the next one of the same paragraph follows.
    assert_eq!(
        with("Search Sentry events and replays. Use for event counts/statistics. Query syntax: …", 160),
        "Search Sentry events and replays. Use for event counts/statistics."
    );
    assert_eq!(
        with("Make line-based edits to a text file. Each edit replaces exact lines.\n\nReturns a diff.", 160),
        "Make line-based edits to a text file. Each edit replaces exact lines."
    );
    // Filler is stripped from it too.
    assert_eq!(with("Read a file. This tool returns its text.", 160), "Read a file. Returns its text.");
    // Not when the first sentence is half the budget or more.
    assert_eq!(with("Read a file. Returns its text.", 24), "Read a file.");
    // Not when both do not fit.
    assert_eq!(with("Read a file. It returns the text of the file with its encoding.", 50), "Read a file.");
    // Not from the next paragraph or a list, nor a sentence that opens a list.
    assert_eq!(with("Read a file.\n\nReturns its text.", 160), "Read a file.");
    assert_eq!(with("Get the configuration. Config includes fields for:\n- a", 160), "Get the configuration.");
    assert_eq!(with("Read a file. Use this tool to:", 160), "Read a file.");
}

#[test]
fn takes_the_first_sentence() {
    assert_eq!(
        short("Read an image or audio file. Returns the base64 encoded data and MIME type."),
        "Read an image or audio file."
    );
    assert_eq!(short("Is it here? Then say so."), "Is it here?");
    assert_eq!(short("Stop now! Really."), "Stop now!");
}

#[test]
fn adds_a_period_to_an_unpunctuated_sentence() {
    assert_eq!(short("Search for GitHub repositories"), "Search for GitHub repositories.");
    assert_eq!(short("List things:"), "List things.");
}

#[test]
fn does_not_split_on_abbreviations_decimals_versions_urls_or_file_names() {
    assert_eq!(short("Search files, e.g. logs. Fast."), "Search files, e.g. logs.");
    assert_eq!(short("Search files, i.e. logs. Fast."), "Search files, i.e. logs.");
    assert_eq!(short("Convert images, audio, etc. Into anything."), "Convert images, audio, etc. Into anything.");
    assert_eq!(short("Compare tabs vs. spaces. Fast."), "Compare tabs vs. spaces.");
    assert_eq!(short("Takes approx. 5 seconds. Fast."), "Takes approx. 5 seconds.");
    assert_eq!(short("Upgrade to v1.2 or 3.5 safely. Fast."), "Upgrade to v1.2 or 3.5 safely.");
    assert_eq!(short("Fetch https://example.com/a.b?c=d for you. Fast."), "Fetch https://example.com/a.b?c=d for you.");
    assert_eq!(short("Render README.md as HTML. Fast."), "Render README.md as HTML.");
    assert_eq!(short("Query U.S. census data. Fast."), "Query U.S. census data.");
    assert_eq!(short("Open the file. then close it. Done."), "Open the file. then close it.");
}

#[test]
fn ends_a_sentence_after_a_version_or_file_name() {
    assert_eq!(short("Upgrades to v1.2. Then restarts."), "Upgrades to v1.2.");
    assert_eq!(short("Read README.md. Then summarize it."), "Read README.md.");
    assert_eq!(short("Say \"hello.\" Then stop."), "Say \"hello.\"");
}

#[test]
fn stops_at_paragraphs_lists_and_new_lines_of_thought() {
    assert_eq!(short("Get weather\n\nReturns the temperature"), "Get weather.");
    assert_eq!(short("Tools for files:\n- read\n- write"), "Tools for files.");
    assert_eq!(short("Get weather\nReturns the temperature"), "Get weather.");
    assert_eq!(short("Get weather for a city\n- city: name"), "Get weather for a city.");
    // A wrapped line continues the sentence.
    assert_eq!(
        short("Fetch the content of a URL and convert it\nto markdown for easier reading."),
        "Fetch the content of a URL and convert it to markdown for easier reading."
    );
    assert_eq!(short("Fetch the page of the\nGitHub repository."), "Fetch the page of the GitHub repository.");
}

#[test]
fn strips_leading_markdown() {
    assert_eq!(short("# Search\n\nSearch the web for pages."), "Search the web for pages.");
    assert_eq!(short("## Search the web"), "Search the web.");
    assert_eq!(short("**Search** the web. More."), "Search the web.");
    assert_eq!(short("**Important:** search the web."), "Important: search the web.");
    assert_eq!(short("- search the web"), "Search the web.");
    assert_eq!(short("> Search the web."), "Search the web.");
    // Glob patterns are not bold markers.
    assert_eq!(short("Match **/*.rs and **/*.md files."), "Match **/*.rs and **/*.md files.");
}

#[test]
fn strips_filler() {
    assert_eq!(short("This tool allows you to search files by name."), "Search files by name.");
    assert_eq!(short("This tool lets you search files."), "Search files.");
    assert_eq!(short("This tool is used to search files."), "Search files.");
    assert_eq!(short("This tool will search files."), "Search files.");
    assert_eq!(short("Use this tool to search files."), "Search files.");
    assert_eq!(short("A tool to search files."), "Search files.");
    assert_eq!(short("A tool that returns the time."), "Returns the time.");
    assert_eq!(short("A tool for searching files."), "Searching files.");
    assert_eq!(short("Tool to search files."), "Search files.");
    assert_eq!(short("Allows you to search files."), "Search files.");
    assert_eq!(short("Lets you search files."), "Search files.");
    assert_eq!(short("Used to search files."), "Search files.");
    assert_eq!(short("This function returns the time."), "Returns the time.");
    assert_eq!(short("This tool returns the time."), "Returns the time.");
    assert_eq!(short("A detailed tool for dynamic problem-solving."), "Dynamic problem-solving.");
    // Nothing but filler: the name stands in.
    assert_eq!(short("A tool to."), "T.");
    // "This tool is …" is not a verb phrase to strip.
    assert_eq!(short("This tool is essential."), "This tool is essential.");
}

#[test]
fn capitalizes_words_but_not_identifiers() {
    assert_eq!(short("search files."), "Search files.");
    assert_eq!(short("über alles."), "Über alles.");
    assert_eq!(short("npm_install runs npm."), "npm_install runs npm.");
    assert_eq!(short("iOS builds."), "iOS builds.");
}

#[test]
fn shortens_at_a_word_boundary_with_an_ellipsis() {
    let long = "Create a new file or completely overwrite an existing file with new content";
    let t = tool(json!({"name": "w", "description": long}));
    assert_eq!(minimal_description(&t, 40), "Create a new file or completely…");
    // "or" would dangle before the ellipsis.
    assert_eq!(minimal_description(&t, 30), "Create a new file…");
    // Trailing punctuation and dangling small words go before the ellipsis.
    let t = tool(json!({"name": "w", "description": "Alpha beta gamma of the delta epsilon"}));
    assert_eq!(minimal_description(&t, 24), "Alpha beta gamma…");
    let t = tool(json!({"name": "w", "description": "Alpha, beta; gamma of the delta"}));
    assert_eq!(minimal_description(&t, 12), "Alpha, beta…");
    assert_eq!(minimal_description(&t, 7), "Alpha…");
    // One long word is hard-cut.
    let t = tool(json!({"name": "w", "description": "Supercalifragilistic"}));
    assert_eq!(minimal_description(&t, 6), "Super…");
    assert_eq!(minimal_description(&t, 1), "…");
    assert_eq!(minimal_description(&t, 0), "…");
    // Exactly at the limit: no cut.
    let t = tool(json!({"name": "w", "description": "Read it."}));
    assert_eq!(minimal_description(&t, 8), "Read it.");
}

#[test]
fn shortens_at_a_clause_boundary_when_one_keeps_most_of_the_text() {
    let cut =
        |description: &str, limit| minimal_description(&tool(json!({"name": "w", "description": description})), limit);
    // Before a clause punctuation mark.
    assert_eq!(cut("Alpha, beta; gamma of the delta", 20), "Alpha, beta…");
    // Before a subordinate clause rather than inside it.
    assert_eq!(
        cut(
            "Search an index of public repositories and code documentation for programming questions that need up-to-date answers",
            100
        ),
        "Search an index of public repositories and code documentation for programming questions…"
    );
    // Before an aside, and never inside brackets.
    assert_eq!(
        cut(
            "Retrieve matched CSS rules, inherited styles, and cascade wrappers (@layer, @media, @container, @scope) of a node",
            90
        ),
        "Retrieve matched CSS rules, inherited styles, and cascade wrappers…"
    );
    assert_eq!(
        cut(
            "Get the fields available on issues of a project, deduplicated across issue types — i.e. which fields tickets need",
            100
        ),
        "Get the fields available on issues of a project, deduplicated across issue types…"
    );
    // A boundary that would keep too little of the budget is not used.
    assert_eq!(
        cut("Compare files, then report every difference between them line by line with context", 60),
        "Compare files, then report every difference between them…"
    );
    // Clause words count only as whole words.
    assert_eq!(
        cut("Fetch and install the newest packaged software builds for every platform", 60),
        "Fetch and install the newest packaged software builds…"
    );
}

#[test]
fn a_sentence_cut_before_a_list_does_not_dangle() {
    assert_eq!(
        short("Retrieve detailed metadata about a file including:\n- size\n- type"),
        "Retrieve detailed metadata about a file."
    );
    assert_eq!(short("Get weather for:\n- a city"), "Get weather.");
    assert_eq!(short("Run a query, e.g.:\n- select"), "Run a query.");
    // A colon alone is just replaced.
    assert_eq!(short("Tools for files:\n- read"), "Tools for files.");
}

#[test]
fn counts_chars_not_bytes() {
    let t = tool(json!({"name": "w", "description": "Lit les fichiers égaux à ça très vite"}));
    let out = minimal_description(&t, 20);
    assert_eq!(out, "Lit les fichiers…");
    let t = tool(json!({"name": "w", "description": "日本語のファイルを読みます。次に"}));
    assert_eq!(minimal_description(&t, 160), "日本語のファイルを読みます。 次に.");
    assert_eq!(minimal_description(&t, 20), "日本語のファイルを読みます。");
}

#[test]
fn falls_back_to_titles_then_the_name() {
    let t = tool(json!({"name": "read_file", "title": "Read File (Deprecated)", "description": "  "}));
    assert_eq!(minimal_description(&t, 160), "Read File (Deprecated).");
    let t = tool(json!({"name": "read_file", "annotations": {"title": "Read a file"}}));
    assert_eq!(minimal_description(&t, 160), "Read a file.");
    let t = tool(json!({"name": "read_file", "description": "..."}));
    assert_eq!(minimal_description(&t, 160), "Read file.");
    let t = tool(json!({"name": "getTinyImage", "description": 42}));
    assert_eq!(minimal_description(&t, 160), "Get tiny image.");
    let t = tool(json!({"name": "fetchURLContent"}));
    assert_eq!(minimal_description(&t, 160), "Fetch URL content.");
    let t = tool(json!({"name": "gzip-file-as-resource"}));
    assert_eq!(minimal_description(&t, 160), "Gzip file as resource.");
    let t = tool(json!({"name": "__"}));
    assert_eq!(minimal_description(&t, 160), "Tool.");
    // Filler-only first sentence falls back too.
    let t = tool(json!({"name": "files", "title": "File tools", "description": "Use this tool to:\n- read\n- write"}));
    assert_eq!(minimal_description(&t, 160), "File tools.");
}

#[test]
fn huge_hostile_descriptions_are_cheap() {
    let hostile = [
        "**a ".repeat(50_000),
        "e.g. ".repeat(50_000),
        "word ".repeat(50_000),
        "line\n".repeat(50_000),
        format!("{}.", "x".repeat(200_000)),
    ];
    let start = std::time::Instant::now();
    for description in &hostile {
        let out = minimal_description(&tool(json!({"name": "t", "description": description})), 160);
        assert!(!out.is_empty() && out.chars().count() <= 160, "{out}");
    }
    assert_eq!(short(&"word ".repeat(50_000)).chars().count(), 160);
    let t = tool(json!({"name": "t", "title": "**a ".repeat(50_000)}));
    assert!(minimal_description(&t, 160).chars().count() <= 160);
    // Quadratic work on these inputs would take minutes.
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "{:?}", start.elapsed());
}

/// Real descriptions from popular MCP servers and what toolgate lists for them.
#[test]
fn real_world_descriptions() {
    let cases: &[(&str, &str)] = &[
        // @modelcontextprotocol/server-filesystem
        ("read_file", "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."),
        (
            "read_text_file",
            "Read the complete contents of a file from the file system as text. Handles various text encodings and \
             provides detailed error messages if the file cannot be read. Use this tool when you need to examine the \
             contents of a single file. Use the 'head' parameter to read only the first N lines of a file, or the \
             'tail' parameter to read only the last N lines of a file. Operates on the file as text regardless of \
             extension. Only works within allowed directories.",
        ),
        (
            "read_multiple_files",
            "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one \
             when you need to analyze or compare multiple files. Each file's content is returned with its path as a \
             reference. Failed reads for individual files won't stop the entire operation. Only works within allowed \
             directories.",
        ),
        (
            "list_directory_with_sizes",
            "Get a detailed listing of all files and directories in a specified path, including sizes. Results \
             clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is useful \
             for understanding directory structure and finding specific files within a directory. Only works within \
             allowed directories.",
        ),
        (
            "search_files",
            "Recursively search for files and directories matching a pattern. The patterns should be glob-style \
             patterns that match paths relative to the working directory. Use pattern like '*.ext' to match files in \
             current directory, and '**/*.ext' to match files in all subdirectories. Returns full paths to all \
             matching items. Great for finding files when you don't know their exact location. Only searches within \
             allowed directories.",
        ),
        (
            "list_allowed_directories",
            "Returns the list of directories that this server is allowed to access. Subdirectories within these \
             allowed directories are also accessible. Use this to understand which directories and their nested \
             paths are available before trying to access files.",
        ),
        // @modelcontextprotocol/server-github
        ("create_or_update_file", "Create or update a single file in a GitHub repository"),
        ("fork_repository", "Fork a GitHub repository to your account or specified organization"),
        ("get_issue", "Get details of a specific issue in a GitHub repository."),
        ("update_pull_request_branch", "Update a pull request branch with the latest changes from the base branch"),
        // @modelcontextprotocol/server-everything
        ("echo", "Echoes back the input"),
        ("printEnv", "Prints all environment variables, helpful for debugging MCP server configuration"),
        ("sampleLLM", "Samples from an LLM using MCP's sampling feature"),
        (
            "gzip-file-as-resource",
            "Compresses a single file using gzip compression. Depending upon the selected output type, returns either \
             the compressed data as a gzipped resource or a resource link, allowing it to be downloaded in a \
             subsequent request during the current session.",
        ),
        // @modelcontextprotocol/server-sequential-thinking
        (
            "sequentialthinking",
            "A detailed tool for dynamic and reflective problem-solving through thoughts.\nThis tool helps analyze \
             problems through a flexible thinking process that can adapt and evolve.\nEach thought can build on, \
             question, or revise previous insights as understanding deepens.\n\nWhen to use this tool:\n- Breaking \
             down complex problems into steps\n- Planning and design with room for revision",
        ),
        // mcp-server-fetch
        (
            "fetch",
            "Fetches a URL from the internet and optionally extracts its contents as markdown.\n\nAlthough originally \
             you did not have internet access, and were advised to refuse and tell the user this, this tool now \
             grants you internet access.",
        ),
        // @modelcontextprotocol/server-brave-search
        (
            "brave_web_search",
            "Performs a web search using the Brave Search API, ideal for general queries, news, articles, and online \
             content. Use this for broad information gathering, recent events, or when you need diverse web sources. \
             Supports pagination, content filtering, and freshness controls. Maximum 20 results per request, with \
             offset for pagination. ",
        ),
        // Context7
        (
            "get-library-docs",
            "Fetches up-to-date documentation for a library. You must call 'resolve-library-id' first to obtain the \
             exact Context7-compatible library ID required to use this tool, UNLESS the user explicitly provides a \
             library ID in the format '/org/project' or '/org/project/version' in their query.",
        ),
        // A FastMCP docstring.
        (
            "find_files",
            "Find files matching a glob pattern\n    under a root folder.\n\n    Args:\n        pattern: The glob \
             pattern.\n        root: Where to look.\n\n    Returns:\n        Matching paths.\n    ",
        ),
        // A long single sentence, shortened.
        (
            "query_warehouse",
            "Run a read-only SQL query against the analytics warehouse, returning rows as JSON objects with column \
             names as keys, paginated by an opaque cursor, with a configurable row limit and timeout",
        ),
    ];
    let rows: Vec<Value> = cases
        .iter()
        .map(|(name, description)| {
            let minimal = minimal_description(&tool(json!({"name": name, "description": description})), 160);
            assert!(minimal.chars().count() <= 160, "{name}: {minimal}");
            json!({"tool": name, "minimal": minimal})
        })
        .collect();
    insta::assert_json_snapshot!("real_world_minimal_descriptions", rows);
}

/// Words of a plain single sentence: no filler, abbreviation or punctuation.
fn plain_sentence() -> impl Strategy<Value = String> {
    let first = prop::sample::select(vec!["Search", "Read", "List", "Create", "Fetch", "Delete", "Update"]);
    let word = "[a-z]{2,9}".prop_filter("not an abbreviation", |w| !ABBREVIATIONS.contains(&w.as_str()));
    (first, prop::collection::vec(word, 0..12)).prop_map(|(first, rest)| {
        let mut words = vec![first.to_owned()];
        words.extend(rest);
        words.join(" ")
    })
}

proptest! {
    #[test]
    fn never_empty_never_over_the_limit_never_panics(
        description in any::<String>(),
        title in proptest::option::of(any::<String>()),
        name in any::<String>(),
        limit in 0usize..300,
    ) {
        let mut t = json!({"name": name, "description": description});
        if let Some(title) = title {
            t["title"] = json!(title);
        }
        let out = minimal_description(&tool(t), limit);
        prop_assert!(!out.is_empty());
        prop_assert!(out.chars().count() <= limit.max(1), "{} chars > {}", out.chars().count(), limit);
    }

    #[test]
    fn never_empty_on_unicode_text(description in "\\PC{0,400}", limit in 1usize..200) {
        let out = minimal_description(&tool(json!({"name": "x", "description": description})), limit);
        prop_assert!(!out.is_empty());
        prop_assert!(out.chars().count() <= limit);
    }

    #[test]
    fn a_short_plain_sentence_is_kept(sentence in plain_sentence()) {
        let limit = sentence.chars().count() + 1;
        let out = minimal_description(&tool(json!({"name": "x", "description": sentence.clone()})), limit);
        prop_assert_eq!(out, format!("{sentence}."));
        let out = minimal_description(&tool(json!({"name": "x", "description": format!("{sentence}. More here.")})), limit);
        prop_assert_eq!(out, format!("{sentence}."));
        // With room for more, a short sentence gets the next one.
        let out = minimal_description(&tool(json!({"name": "x", "description": format!("{sentence}. More here.")})), 300);
        prop_assert_eq!(out, format!("{sentence}. More here."));
    }

    #[test]
    fn a_long_plain_sentence_is_cut_to_a_prefix_at_a_word_boundary(sentence in plain_sentence(), limit in 8usize..60) {
        prop_assume!(sentence.chars().count() + 1 > limit);
        let out = minimal_description(&tool(json!({"name": "x", "description": sentence.clone()})), limit);
        prop_assert!(out.chars().count() <= limit);
        let kept = out.strip_suffix('…').expect("cut text ends with an ellipsis");
        prop_assert!(sentence.starts_with(kept), "{kept:?} is not a prefix of {sentence:?}");
        let next = sentence[kept.len()..].chars().next();
        prop_assert!(next == Some(' ') || kept.chars().count() == limit - 1, "cut mid-word: {kept:?}");
    }
}
