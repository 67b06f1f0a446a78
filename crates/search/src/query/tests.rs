use super::*;

fn clauses(query: &str) -> Vec<String> {
    segments(query).clauses
}

#[test]
fn one_sentence_is_one_segment() {
    let s = segments("Why is the payments pod crashlooping?");
    assert_eq!(s, Segments { whole: "Why is the payments pod crashlooping?".into(), clauses: vec![] });
    // identifiers and short tails stay with their clause
    assert!(clauses("search_papers with au:Hinton in cs.LG, newest first").is_empty());
    assert!(clauses("Report a bug: it crashes").is_empty());
}

#[test]
fn steps_split() {
    assert_eq!(
        clauses("Find the latest paper on RAG. Then summarize it and save it to notes.md"),
        ["Find the latest paper on RAG", "Then summarize it and save it to notes.md"]
    );
    assert_eq!(
        clauses("Search flights to Paris, then book the cheapest one and also email me the receipt"),
        ["Search flights to Paris", "book the cheapest one", "email me the receipt"]
    );
    // a clause under three words joins the next; a short last one the one before
    assert!(clauses("Ship it: open a review request against main. Thanks!").is_empty());
    assert_eq!(
        clauses("Find the paper on RAG. Then save it to notes. Thanks!"),
        ["Find the paper on RAG", "Then save it to notes Thanks!"]
    );
}

#[test]
fn pasted_data_is_left_out() {
    let query = "Why is the payments pod crashlooping?\n\nFor context:\n\
                 2026-11-02 14:03:11 ERROR [worker-3] Connection refused: upstream db:5432\n\
                 2026-11-02 14:03:12 WARN retrying in 5s (attempt 2/5)";
    assert_eq!(
        segments(query),
        Segments { whole: "Why is the payments pod crashlooping? For context:".into(), clauses: vec![] }
    );
    let json = "Store this order for later:\n{\"order_id\": 48213, \"status\": \"shipped\", \"items\": [{\"sku\": \"A-1138\"}]}";
    assert_eq!(segments(json).whole, "Store this order for later:");
    // data alone is still searched
    assert_eq!(segments("date,region,units\n2026-01-01,EMEA,120").whole, "date,region,units\n2026-01-01,EMEA,120");
}

#[test]
fn data_or_words() {
    for data in [
        "{\"order_id\": 48213, \"status\": \"shipped\", \"items\": [{\"sku\": \"A-1138\", \"qty\": 2}]}",
        "2026-01-01,EMEA,120,5400",
        "at com.example.Worker.run(Worker.java:42)",
        "2026-11-02 14:03:12 WARN retrying in 5s (attempt 2/5)",
    ] {
        assert!(data_like(data), "{data}");
    }
    for words in [
        "Get the logs of pod web-1 in namespace prod-eu",
        "Who is older, by how many years, the director of film Barbie?",
        "Hi team, following up on yesterday's sync: we agreed to move the launch.",
    ] {
        assert!(!data_like(words), "{words}");
    }
    assert!(plain_word("crash-looping") && plain_word("don't") && plain_word("Zürich"));
    assert!(!plain_word("-x") && !plain_word("a--b") && !plain_word("v2") && !plain_word("x'") && !plain_word(""));
}

#[test]
fn clauses_are_bounded() {
    let query = (0..40).map(|i| format!("Step {i} does a thing.")).collect::<Vec<_>>().join(" ");
    assert_eq!(clauses(&query).len(), MAX_CLAUSES);
}
