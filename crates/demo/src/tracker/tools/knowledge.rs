//! The knowledge-base tool: `search_notes`.

use serde_json::{Value, json};

use super::{State, annotations};
use crate::kit::{Args, Tool, result};
use crate::tracker::model::Note;

const SEARCH_NOTES: &str = "\
Search the team's knowledge base: runbooks, checklists, guidelines, architecture notes, postmortems and decision \
records, written in Markdown by the team.

Use this when a question is about how the team works or why something is the way it is: release steps, on-call \
rules, how the billing migration can be rolled back, what happened in an incident, how estimation works, what \
was decided about a tool. Prefer the knowledge base over guessing, and quote or cite the note id when you use it. \
Do not use it to find issues (search_issues) or project status (summarize_project).

Matching: the query is split into words; a note scores for each word found in its title (weight 3), its tags \
(weight 2) or its body (weight 1), case-insensitively. Notes matching no word are left out. `tags` restricts the \
search to notes carrying all of the given tags; with tags and an empty query you get every note with those tags.

By default each hit carries a snippet (the first sentence that contains a query word) rather than the whole body, \
to keep answers short; set include_body to true to get the full Markdown of each hit, or read a single note in \
full through the resource demo://notes/{id}.

Returns `hits` ordered by score (highest first, ties by id), each with id, title, tags, author, updated (date), \
score and snippet or body, plus `total` matches before the limit.";

pub fn search_notes(state: State) -> Tool {
    let definition = json!({
        "name": "search_notes",
        "title": "Search the knowledge base",
        "description": SEARCH_NOTES,
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for, e.g. \"rollback billing\"."},
                "tags": {"type": "array", "items": {"type": "string"}, "description": "Only notes carrying all of these tags."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                "include_body": {"type": "boolean", "default": false, "description": "Return each note's full Markdown."},
            },
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "total": {"type": "integer"},
                "hits": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string"},
                            "title": {"type": "string"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "author": {"type": "string"},
                            "updated": {"type": "string", "format": "date"},
                            "score": {"type": "integer"},
                            "snippet": {"type": "string"},
                            "body": {"type": "string"},
                        },
                        "required": ["id", "title", "tags", "score"],
                    },
                },
            },
            "required": ["total", "hits"],
        },
        "annotations": annotations("Search the knowledge base", true, false, true),
    });
    Tool::sync(definition, move |args| {
        let a = Args::new(&args);
        a.allow_only(&["query", "tags", "limit", "include_body"])?;
        let words: Vec<String> = a
            .str("query")?
            .unwrap_or_default()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let tags = a.str_list("tags")?.unwrap_or_default();
        if words.is_empty() && tags.is_empty() {
            return Err(crate::kit::ToolFailure::msg(
                "Give a query, tags, or both: searching for nothing would return the whole knowledge base.",
            ));
        }
        let limit = a.int_in("limit", 1, 20)?.unwrap_or(5) as usize;
        let include_body = a.bool("include_body")?.unwrap_or(false);
        let t = state.lock();
        let mut hits: Vec<(i64, &Note)> = t
            .notes
            .iter()
            .filter(|n| tags.iter().all(|tag| n.tags.iter().any(|x| x == tag)))
            .map(|n| (score(n, &words), n))
            .filter(|(s, _)| words.is_empty() || *s > 0)
            .collect();
        hits.sort_by(|(sa, na), (sb, nb)| sb.cmp(sa).then(na.id.cmp(&nb.id)));
        let total = hits.len();
        let hits: Vec<Value> = hits
            .into_iter()
            .take(limit)
            .map(|(s, n)| {
                let mut hit = json!({"id": n.id, "title": n.title, "tags": n.tags, "author": n.author, "updated": n.updated, "score": s});
                if include_body {
                    hit["body"] = json!(n.body);
                } else {
                    hit["snippet"] = json!(snippet(n, &words));
                }
                hit
            })
            .collect();
        Ok(result::structured(json!({"total": total, "hits": hits})))
    })
}

fn score(note: &Note, words: &[String]) -> i64 {
    let title = note.title.to_lowercase();
    let body = note.body.to_lowercase();
    words
        .iter()
        .map(|w| {
            let mut s = 0;
            if title.contains(w.as_str()) {
                s += 3;
            }
            if note.tags.iter().any(|t| t.contains(w.as_str())) {
                s += 2;
            }
            if body.contains(w.as_str()) {
                s += 1;
            }
            s
        })
        .sum()
}

/// The first sentence of the body (after the heading) that contains a query
/// word, or the first sentence.
fn snippet(note: &Note, words: &[String]) -> String {
    let text = note.body.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join(" ");
    let sentences: Vec<&str> = text.split_inclusive(". ").map(str::trim).filter(|s| !s.is_empty()).collect();
    let pick = sentences
        .iter()
        .find(|s| {
            let lower = s.to_lowercase();
            words.iter().any(|w| lower.contains(w.as_str()))
        })
        .or(sentences.first())
        .copied()
        .unwrap_or_default();
    let mut out: String = pick.chars().take(240).collect();
    if pick.chars().count() > 240 {
        out.push('…');
    }
    out
}
