//! Minimal descriptions: the one sentence `tools/list` shows for a
//! progressive tool.
//!
//! The sentence is derived from the upstream description: its first sentence,
//! without leading markdown or filler such as "This tool allows you to",
//! capitalized, followed by the next sentence when the first is short and
//! both fit, and cut at a word boundary to the configured length. When the
//! upstream has no usable description, the tool's `title`, then
//! `annotations.title`, then its humanized name stand in, so the result is never
//! empty.

use serde_json::{Map, Value};

#[cfg(test)]
mod tests;

/// The ellipsis appended to a shortened description (counts as one char).
const ELLIPSIS: char = '…';

/// Words that end with a dot without ending the sentence (compared lowercase,
/// without the dot).
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "eg", "ie", "etc", "vs", "approx", "cf", "incl", "esp", "resp", "viz", "al", "fig", "mr", "mrs",
    "dr", "jr", "sr", "inc", "ltd", "corp", "dept", "avg", "misc",
];

/// Leading phrases that carry no meaning, longest first (compared ASCII
/// case-insensitively, each followed by a space in the normalized text).
const FILLERS: &[&str] = &[
    "you can use this tool to",
    "you can use this to",
    "this tool allows the user to",
    "this tool allows users to",
    "this tool allows you to",
    "this tool allows",
    "this tool lets you",
    "this tool enables you to",
    "this tool enables",
    "this tool can be used to",
    "this tool can be used for",
    "this tool is designed to",
    "this tool is used to",
    "this tool is used for",
    "this tool helps you to",
    "this tool helps you",
    "this tool helps",
    "this tool will",
    "this tool can",
    "this function allows you to",
    "this function lets you",
    "this function is used to",
    "this function will",
    "this function can",
    "use this tool to",
    "use this tool for",
    "use this function to",
    "use this to",
    "call this tool to",
    "call this to",
    "a tool that can",
    "a tool that",
    "a tool which",
    "a tool to",
    "a tool for",
    "a function that",
    "a function to",
    "a function for",
    "tool that",
    "tool to",
    "tool for",
    "function that",
    "function to",
    "allows the user to",
    "allows users to",
    "allows you to",
    "lets you",
    "enables you to",
    "helps you to",
    "helps you",
    "can be used to",
    "is used to",
    "used to",
];

/// Words after which a line break is a soft wrap, not the end of a thought.
const JOINERS: &[&str] = &[
    "a", "an", "the", "to", "of", "and", "or", "for", "with", "in", "on", "by", "from", "as", "at", "into", "via",
    "is", "are", "be", "that", "which", "its", "your", "their", "this", "if", "when", "than", "not",
];

/// Words a shortened description should not end on (nor a sentence that
/// ended in a colon: "metadata including:" → "metadata.").
const DANGLING: &[&str] = &[
    "a",
    "an",
    "the",
    "to",
    "of",
    "and",
    "or",
    "for",
    "with",
    "in",
    "on",
    "by",
    "from",
    "as",
    "at",
    "into",
    "via",
    "that",
    "which",
    "its",
    "your",
    "their",
    "this",
    "i.e",
    "e.g",
    "including",
    "such",
    "especially",
    "whose",
    "where",
    "while",
    "because",
    "unless",
];

/// Words that start a subordinate clause or an aside: a shortened description
/// may end right before one (compared lowercase, each after a space).
const CLAUSE_STARTS: &[&str] = &[
    "that",
    "which",
    "who",
    "whose",
    "where",
    "while",
    "because",
    "unless",
    "so",
    "i.e.",
    "e.g.",
    "including",
    "such",
    "especially",
    "except",
];

/// A clause cut must keep at least this share of the budget (in tenths);
/// otherwise the cut falls at the last word boundary.
const MIN_CLAUSE_SHARE_TENTHS: usize = 6;

/// The minimal description of an upstream tool object: at most `max_chars`
/// characters (a limit of 0 is treated as 1), never empty.
pub fn minimal_description(tool: &Map<String, Value>, max_chars: usize) -> String {
    let limit = max_chars.max(1);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    // Only the start of the text can end up in the result, so a huge (or
    // hostile) description is cut to a window first; the margin covers filler
    // and markdown that get stripped.
    let window = limit.saturating_add(256);
    let sentence = text(tool.get("description"))
        .and_then(|d| summary_sentences(&d, window, limit))
        .or_else(|| text(tool.get("title")).and_then(|t| label_sentence(&t, window)))
        .or_else(|| text(tool.get("annotations").and_then(|a| a.get("title"))).and_then(|t| label_sentence(&t, window)))
        .unwrap_or_else(|| humanize(tool.get("name").and_then(Value::as_str).unwrap_or("")));
    shorten(&sentence, limit)
}

/// The sentence(s) a description is summed up by: its cleaned first
/// sentence, followed by the next sentence of the same paragraph when the
/// first is shorter than half of `limit` and both fit in `limit` (see
/// [`second_sentence`]). Looks at no more than `window` chars of the first
/// paragraph; `None` when nothing meaningful is left.
fn summary_sentences(description: &str, window: usize, limit: usize) -> Option<String> {
    let (sentence, rest) = lead_sentence(description, window)?;
    let used = sentence.chars().count();
    if used < limit / 2
        && let Some(next) = second_sentence(&rest)
        && used + 1 + next.chars().count() <= limit
    {
        return Some(format!("{sentence} {next}"));
    }
    Some(sentence)
}

/// The cleaned first sentence of a description, looking at no more than
/// `window` chars of its first paragraph; `None` when nothing meaningful is
/// left. (The tests of sentence cutting use it.)
#[cfg(test)]
fn first_sentence(description: &str, window: usize) -> Option<String> {
    lead_sentence(description, window).map(|(sentence, _)| sentence)
}

/// The cleaned first sentence and the rest of the (windowed) first paragraph.
fn lead_sentence(description: &str, window: usize) -> Option<(String, String)> {
    let paragraph = truncate_chars(normalize_space(&first_paragraph(description)), window);
    let unmarked = strip_markdown(&paragraph);
    let first = cut_sentence(&unmarked);
    let sentence = first.trim();
    if is_only_filler(sentence) {
        return None;
    }
    let rest = unmarked[first.len()..].to_owned();
    finish(strip_filler(sentence)).map(|s| (s, rest))
}

/// The sentence that follows a short first one, cleaned like it. A short
/// first sentence often names the action but not what sets the tool apart
/// ("Search Sentry events and replays." + "Use for event counts/statistics.";
/// "Make line-based edits to a text file." + "Each edit replaces exact line
/// sequences with new content."). The selection-fidelity evaluation
/// (`benches/fidelity/`) measured it on the corpus: 4 more of 420 tasks right
/// at top-1 and 4 more at top-3, for 580 more tokens (10.8% to 11.3% of the
/// full definitions). `None` when there is none, or when it introduces a list
/// ("Config includes fields for:"), which would be lost.
fn second_sentence(rest: &str) -> Option<String> {
    let next = cut_sentence(rest.trim()).trim();
    if next.is_empty() || next.ends_with(':') || is_only_filler(next) {
        return None;
    }
    finish(strip_filler(next))
}

/// A title-like label (`title`, `annotations.title`) as a sentence.
fn label_sentence(label: &str, window: usize) -> Option<String> {
    finish(&strip_markdown(&truncate_chars(normalize_space(label), window)))
}

/// `s` cut to its first `max` chars.
fn truncate_chars(mut s: String, max: usize) -> String {
    if let Some((end, _)) = s.char_indices().nth(max) {
        s.truncate(end);
    }
    s
}

/// Capitalizes and punctuates a sentence; `None` if it holds no letter or digit.
fn finish(sentence: &str) -> Option<String> {
    let sentence = sentence.trim();
    if !sentence.chars().any(char::is_alphanumeric) {
        return None;
    }
    Some(terminate(&capitalize(sentence)))
}

/// The text up to the first paragraph break: a blank line, a markdown list,
/// heading, quote, table or code fence, a line after one ending in `:`, or an
/// unpunctuated line followed by one that starts with a capital letter (a new
/// thought rather than a wrapped line). Leading headings are skipped when text
/// follows them.
fn first_paragraph(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut start = 0;
    while start < lines.len() && lines[start].is_empty() {
        start += 1;
    }
    // Skip leading markdown headings ("# Read file") when a body follows.
    let mut body = start;
    while body < lines.len() && (lines[body].starts_with('#') || lines[body].is_empty()) {
        body += 1;
    }
    if body < lines.len() {
        start = body;
    }
    let mut out: Vec<&str> = Vec::new();
    for &line in &lines[start.min(lines.len())..] {
        if let Some(&prev) = out.last()
            && is_break(prev, line)
        {
            break;
        }
        out.push(line);
    }
    out.join(" ")
}

/// Whether `line` starts a new block after `prev` (both trimmed).
fn is_break(prev: &str, line: &str) -> bool {
    if line.is_empty() || starts_block(line) || prev.ends_with(':') {
        return true;
    }
    let prev_open = prev.chars().last().is_some_and(|c| c.is_alphanumeric() || c == ')');
    let starts_upper = line.chars().next().is_some_and(char::is_uppercase);
    let last_word = prev.rsplit(char::is_whitespace).next().unwrap_or("").to_ascii_lowercase();
    prev_open && starts_upper && !JOINERS.contains(&last_word.as_str())
}

/// Whether a trimmed line starts a markdown block (list item, heading, quote,
/// table row, code fence).
fn starts_block(line: &str) -> bool {
    if line.starts_with(['#', '>', '|']) || line.starts_with("```") {
        return true;
    }
    if ["- ", "* ", "+ ", "• "].iter().any(|m| line.starts_with(m)) {
        return true;
    }
    // Ordered list: "1. " or "1) ".
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && {
        let rest = &line[digits..];
        rest.starts_with(". ") || rest.starts_with(") ")
    }
}

/// Collapses every whitespace run (newlines included) into one space.
fn normalize_space(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes leading markdown markers (headings, quotes, list bullets) and bold
/// markers that form a pair.
fn strip_markdown(text: &str) -> String {
    let mut s = text.trim();
    loop {
        let before = s;
        s = s.trim_start_matches('#').trim_start();
        for marker in ["> ", "- ", "* ", "+ ", "• "] {
            if let Some(rest) = s.strip_prefix(marker) {
                s = rest.trim_start();
            }
        }
        if s == before {
            break;
        }
    }
    let unbolded = strip_bold_pairs(s);
    let t = unbolded.trim();
    // An unmatched leading bold marker.
    t.strip_prefix("**").unwrap_or(t).trim().to_owned()
}

/// Removes `**x**` bold pairs, leaving glob patterns such as `**/*.rs` alone:
/// an opener must follow a non-word character and precede a non-space one; a
/// closer must follow a non-space character and precede a non-word one.
/// (`__x__` is left alone: double underscores are common in identifiers.)
fn strip_bold_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("**") {
        let inner = open + 2;
        let opener_ok = rest[..open].chars().last().is_none_or(|c| !c.is_alphanumeric())
            && rest[inner..].chars().next().is_some_and(|c| !c.is_whitespace() && c != '*');
        let close = opener_ok.then(|| find_closer(&rest[inner..]).map(|rel| inner + rel)).flatten();
        match close {
            Some(close) => {
                out.push_str(&rest[..open]);
                out.push_str(&rest[inner..close]);
                rest = &rest[close + 2..];
            }
            None => {
                out.push_str(&rest[..inner]);
                rest = &rest[inner..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The offset of the `**` closing a bold run that starts at `inner`.
fn find_closer(inner: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = inner[from..].find("**") {
        let at = from + rel;
        let before_ok = at > 0 && inner[..at].chars().last().is_some_and(|c| !c.is_whitespace());
        let after_ok = inner[at + 2..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '*');
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + 2;
    }
    None
}

/// The first sentence of normalized text: up to the first `.`, `!` or `?`
/// (plus closing quotes or brackets) followed by a space or the end, unless the
/// dot ends an abbreviation or the next word starts in lowercase. Decimals,
/// versions, URLs and file names never end a sentence because no space follows
/// their dots.
fn cut_sentence(text: &str) -> &str {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if matches!(c, '。' | '！' | '？') {
            return &text[..at + c.len_utf8()];
        }
        if !matches!(c, '.' | '!' | '?') {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < chars.len() && matches!(chars[j + 1].1, '.' | '!' | '?') {
            j += 1;
        }
        while j + 1 < chars.len() && matches!(chars[j + 1].1, '"' | '\'' | '”' | '’' | ')' | ']') {
            j += 1;
        }
        let end = chars[j].0 + chars[j].1.len_utf8();
        let next = chars.get(j + 1).map(|&(_, c)| c);
        let spaced = next.is_none_or(char::is_whitespace);
        let single_dot = c == '.' && j == i;
        let abbreviation = single_dot && is_abbreviation(&text[..at]);
        let next_word_lower = chars.get(j + 2).is_some_and(|&(_, c)| c.is_lowercase());
        if spaced && !abbreviation && !next_word_lower {
            return &text[..end];
        }
        i = j + 1;
    }
    text
}

/// Whether the word just before a dot is an abbreviation (`e.g`, `etc`, a
/// single letter, or dotted initials like `U.S`).
fn is_abbreviation(before_dot: &str) -> bool {
    let word = before_dot.rsplit(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_start_matches(['(', '[', '"', '\'', '“', '‘']);
    if word.is_empty() {
        return false;
    }
    let lower = word.to_lowercase();
    if ABBREVIATIONS.contains(&lower.as_str()) {
        return true;
    }
    let mut letters = word.chars();
    if letters.next().is_some_and(char::is_alphabetic) && letters.next().is_none() {
        return true;
    }
    word.contains('.')
        && word.split('.').all(|seg| (1..=2).contains(&seg.chars().count()) && seg.chars().all(char::is_alphabetic))
}

/// Strips leading filler phrases ("This tool allows you to", "A tool for", …).
fn strip_filler(sentence: &str) -> &str {
    let mut s = sentence;
    for _ in 0..3 {
        let next = strip_one_filler(s);
        if next.len() == s.len() {
            break;
        }
        s = next;
    }
    s
}

fn strip_one_filler(s: &str) -> &str {
    let meaningful = |rest: &str| rest.chars().any(char::is_alphanumeric);
    for filler in FILLERS {
        if let Some(rest) = strip_prefix_ci(s, filler)
            && meaningful(rest)
        {
            return rest;
        }
    }
    let words: Vec<&str> = s.splitn(5, ' ').collect();
    let is = |i: usize, set: &[&str]| words.get(i).is_some_and(|w| set.iter().any(|x| w.eq_ignore_ascii_case(x)));
    // "A detailed tool for …", "An easy function to …".
    if words.len() == 5
        && is(0, &["a", "an"])
        && is(2, &["tool", "function", "utility", "helper"])
        && is(3, &["to", "for", "that", "which"])
    {
        return words[4];
    }
    // "This tool returns …" → "Returns …".
    if words.len() >= 3 && is(0, &["this", "the"]) && is(1, &["tool", "function", "endpoint", "method"]) {
        let verb = words[2];
        let third_person = verb.len() > 3
            && verb.ends_with('s')
            && verb.chars().all(|c| c.is_ascii_lowercase())
            && !matches!(verb, "does" | "needs" | "was" | "has" | "is");
        if third_person {
            let offset = words[0].len() + words[1].len() + 2;
            return &s[offset..];
        }
    }
    s
}

/// Whether the sentence is nothing but a filler phrase ("Use this tool to:").
fn is_only_filler(sentence: &str) -> bool {
    let core = sentence.trim_end_matches(|c: char| !c.is_alphanumeric());
    FILLERS.iter().any(|f| core.eq_ignore_ascii_case(f))
}

/// `s` without `prefix` (ASCII case-insensitive) and the space after it.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.as_bytes().get(..prefix.len())?;
    if !head.eq_ignore_ascii_case(prefix.as_bytes()) {
        return None;
    }
    // The prefix is ASCII, so its length is a char boundary of `s`.
    s[prefix.len()..].strip_prefix(' ')
}

/// Uppercases the first letter unless the first word looks like an
/// identifier (`npm_install`, `iOS`, `` `ls` ``).
fn capitalize(s: &str) -> String {
    let first_word = s.split(' ').next().unwrap_or("");
    let plain = first_word.chars().all(|c| c.is_lowercase() || c == '-' || c == '\'' || c == ',' || c == ':');
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if plain && c.is_lowercase() => c.to_uppercase().chain(chars).collect(),
        _ => s.to_owned(),
    }
}

/// Ends the sentence with terminal punctuation, replacing a dangling `,` `;`
/// `:` or dash.
fn terminate(s: &str) -> String {
    let mut trimmed = s.trim_end_matches(|c: char| c.is_whitespace() || ",;:-–—".contains(c));
    if trimmed.len() < s.trim_end().len() {
        // "metadata including:" introduced a list that is gone now.
        let without = trim_tail(trimmed);
        if without.chars().any(char::is_alphanumeric) {
            trimmed = without;
        }
    }
    let base = if trimmed.chars().any(char::is_alphanumeric) { trimmed } else { s };
    let core = base.trim_end_matches(['"', '\'', '”', '’', ')', ']']);
    if core.ends_with(['.', '!', '?', '…', '。', '！', '？']) { base.to_owned() } else { format!("{base}.") }
}

/// Cuts `s` to at most `limit` chars, appending `…`: at the last clause
/// boundary (see [`clause_cut`]) when one keeps most of the budget, else at
/// the last word boundary.
fn shorten(s: &str, limit: usize) -> String {
    if s.chars().count() <= limit {
        return s.to_owned();
    }
    let budget = limit.saturating_sub(1);
    let prefix_end = s.char_indices().nth(budget).map_or(s.len(), |(i, _)| i);
    let prefix = &s[..prefix_end];
    let min_chars = budget * MIN_CLAUSE_SHARE_TENTHS / 10;
    let cut = match clause_cut(s, prefix_end, min_chars) {
        Some(end) => &s[..end],
        None => {
            // A cut right before a space or clause punctuation ends a word;
            // anything else (letters, digits, the dot of `v1.2`) would split one.
            let mid_word = s[prefix_end..].chars().next().is_some_and(|c| !c.is_whitespace() && !",;:!?)]".contains(c));
            match prefix.rfind(char::is_whitespace) {
                Some(space) if mid_word => &prefix[..space],
                _ => prefix,
            }
        }
    };
    let cut = trim_tail(cut);
    let cut = if cut.chars().any(char::is_alphanumeric) { cut } else { prefix.trim_end() };
    format!("{cut}{ELLIPSIS}")
}

/// The byte offset of the last clause boundary in `s[..end]` that keeps at
/// least `min_chars` chars and no unclosed bracket: before `, ` `; ` `: `, a
/// spaced dash, ` (`, or a word of [`CLAUSE_STARTS`]. "…for programming
/// questions that need…" becomes "…for programming questions…".
fn clause_cut(s: &str, end: usize, min_chars: usize) -> Option<usize> {
    let mut best = None;
    let mut open = 0i32;
    for (chars, (i, c)) in s[..end].char_indices().enumerate() {
        let rest = &s[i..end];
        let boundary = match c {
            ',' | ';' | ':' => rest[1..].starts_with(' '),
            ' ' => {
                let after = &rest[1..];
                let word = after.split(' ').next().unwrap_or("");
                // Only a whole word that fits: "so" is not "software".
                let complete = after.len() > word.len();
                after.starts_with(['(', '—', '–'])
                    || after.starts_with("- ")
                    || (complete && CLAUSE_STARTS.iter().any(|w| word.eq_ignore_ascii_case(w)))
            }
            _ => false,
        };
        if boundary && open == 0 && chars >= min_chars {
            best = Some(i);
        }
        match c {
            '(' | '[' => open += 1,
            ')' | ']' => open -= 1,
            _ => {}
        }
    }
    best
}

/// Drops trailing punctuation and dangling small words before an ellipsis.
fn trim_tail(s: &str) -> &str {
    let mut s = s;
    loop {
        let before = s.len();
        s = s.trim_end_matches(|c: char| c.is_whitespace() || ",;:.-–—(/&\"'“‘[".contains(c));
        if let Some(space) = s.rfind(' ') {
            let last = &s[space + 1..];
            if DANGLING.iter().any(|d| last.eq_ignore_ascii_case(d)) {
                s = &s[..space];
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

/// A sentence from a tool name: `read_file` → "Read file.",
/// `getTinyImage` → "Get tiny image.", `fetchURL` → "Fetch URL.".
fn humanize(name: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    for part in name.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()) {
        words.extend(split_camel(part));
    }
    if words.is_empty() {
        return "Tool.".to_owned();
    }
    let words: Vec<String> = words
        .into_iter()
        .map(|w| {
            let acronym = w.chars().count() > 1 && w.chars().all(|c| !c.is_lowercase());
            if acronym { w } else { w.to_lowercase() }
        })
        .collect();
    format!("{}.", capitalize(&words.join(" ")))
}

/// Splits `getURLContent` into `get`, `URL`, `Content`.
fn split_camel(part: &str) -> Vec<String> {
    let chars: Vec<char> = part.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let boundary = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase() || p.is_ascii_digit() || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}
