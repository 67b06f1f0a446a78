use super::*;
use crate::Param;
use proptest::prelude::*;
use std::sync::OnceLock;

fn doc(server: &str, name: &str, description: &str, params: &[&str]) -> Document {
    Document {
        exposed: format!("{server}__{name}"),
        name: name.into(),
        server: server.into(),
        description: description.into(),
        params: params.iter().map(|p| Param { name: (*p).into(), ..Param::default() }).collect(),
        ..Document::default()
    }
}

fn catalog() -> Vec<Document> {
    vec![
        doc("github", "create_issue", "Create a new issue in a GitHub repository.", &["owner", "repo", "title"]),
        doc("github", "create_pull_request", "Open a pull request from a branch.", &["head", "base"]),
        doc("jira", "jira_get_issue", "Get the details of one Jira issue by its key.", &["issue_key"]),
        doc("jira", "jira_create_issue", "Create a Jira issue in a project.", &["project_key", "summary"]),
        doc("time", "get_current_time", "The current time in a time zone.", &["timezone"]),
        doc("fetch", "fetch", "Fetch a URL and return its content as markdown.", &["url"]),
        doc("slack", "slack_post_message", "Post a message to a Slack channel.", &["channel_id", "text"]),
        doc("kubernetes", "kubectl_logs", "Print the logs of a pod's container.", &["name", "namespace"]),
    ]
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| Index::build(catalog()))
}

fn top(query: &str, limit: usize) -> Vec<&'static str> {
    let index = index();
    index.search(query, limit, |_| true).iter().map(|h| index.exposed(h.doc)).collect()
}

#[test]
fn finds_tools_by_words_and_meaning() {
    assert_eq!(top("open a pull request for my branch", 1), ["github__create_pull_request"]);
    assert_eq!(top("what time is it in Tokyo", 1), ["time__get_current_time"]);
    assert_eq!(top("tell the team in the #ops channel that the deploy is done", 1), ["slack__slack_post_message"]);
    assert_eq!(top("why does my pod keep crashing? show its logs", 1), ["kubernetes__kubectl_logs"]);
}

#[test]
fn every_step_of_a_long_request_has_its_chance() {
    let two =
        top("Print the logs of the web pod in prod. Then post a message to the ops channel saying it is fixed", 2);
    assert!(two.contains(&"kubernetes__kubectl_logs") && two.contains(&"slack__slack_post_message"), "{two:?}");
    // pasted data under the request does not drown it
    let pasted = "What time is it in Tokyo right now?\n\
                  {\"issue_key\": \"PAY-12\", \"pull_request\": 88, \"repo\": \"octo/widgets\", \"url\": \"https://x.io/a\"}\n\
                  2026-11-02 14:03:11 ERROR [worker-3] issue fetch failed: https://x.io/a (pod web-1)";
    assert_eq!(top(pasted, 1), ["time__get_current_time"]);
}

#[test]
fn exact_name_goes_first() {
    // "create issue" favours the GitHub tool by words; naming the Jira one wins
    assert_eq!(top("jira_create_issue: a new issue in the PAY project", 1), ["jira__jira_create_issue"]);
    assert_eq!(top("use github__create_issue", 1), ["github__create_issue"]);
    let hits = index().search("JIRA_GET_ISSUE PAY-12", 8, |_| true);
    assert_eq!(index().exposed(hits[0].doc), "jira__jira_get_issue");
    assert!(hits[0].score > hits[1].score + 1.0, "{hits:?}");
}

#[test]
fn visible_limit_and_ties() {
    let index = index();
    let hits = index.search("issue", 10, |d| d != 2);
    assert!(hits.len() == 7 && hits.iter().all(|h| h.doc != 2));
    assert_eq!(index.search("issue", 0, |_| true), []);
    assert_eq!(index.search("issue", 3, |_| false), []);
    // a query without a known word or token: every tool scores 0, by name
    let hits = index.search("¿¡", 3, |_| true);
    assert!(hits.iter().all(|h| h.score == 0.0));
    let names: Vec<&str> = hits.iter().map(|h| index.exposed(h.doc)).collect();
    assert_eq!(names, ["fetch__fetch", "github__create_issue", "github__create_pull_request"]);
}

#[test]
fn empty_index() {
    let index = Index::build(Vec::new());
    assert!(index.is_empty());
    assert_eq!(index.search("anything", 5, |_| true), []);
}

#[test]
fn is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Index>();
}

#[test]
fn heap_bytes_counts_vectors_and_postings() {
    let index = index();
    assert!(index.heap_bytes() > index.len() * DIMS * 4);
    assert!(index.heap_bytes() < index.len() * 4096);
}

#[test]
fn min_max_normalizes() {
    assert_eq!(min_max(vec![1.0, 3.0, 2.0]), [0.0, 1.0, 0.5]);
    assert_eq!(min_max(vec![2.0, 2.0]), [0.0, 0.0]);
    assert_eq!(min_max(Vec::new()), Vec::<f32>::new());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn search_never_panics(query in "\\PC{0,80}", limit in 0usize..12, mask in any::<u8>()) {
        let index = index();
        let hits = index.search(&query, limit, |d| mask & (1 << d) != 0);
        prop_assert!(hits.len() <= limit);
        prop_assert_eq!(hits.len(), limit.min(mask.count_ones() as usize));
        prop_assert!(hits.iter().all(|h| mask & (1 << h.doc) != 0));
        prop_assert!(hits.iter().all(|h| h.score.is_finite()));
        prop_assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let mut docs: Vec<usize> = hits.iter().map(|h| h.doc).collect();
        docs.sort_unstable();
        docs.dedup();
        prop_assert_eq!(docs.len(), hits.len());
    }

    #[test]
    fn identifier_like_queries(words in proptest::collection::vec("[a-zA-Z_\\-]{1,12}", 0..6), limit in 1usize..9) {
        let query = words.join(" ");
        let index = index();
        let all = index.search(&query, 8, |_| true);
        let head = index.search(&query, limit, |_| true);
        // a smaller limit is a prefix of the full ranking
        prop_assert_eq!(&all[..limit.min(all.len())], &head[..]);
    }
}
