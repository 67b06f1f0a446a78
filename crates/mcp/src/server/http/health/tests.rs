use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use http::Request;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

use super::*;

async fn get(router: &Router, path: &str) -> (StatusCode, Value) {
    let request = Request::get(path).header("host", "10.1.2.3:8080").body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn healthz_is_always_ok_and_readyz_follows_the_report() {
    let ready = Arc::new(AtomicBool::new(false));
    let flag = ready.clone();
    let router = routes(Readiness::new(move || {
        let up = flag.load(Ordering::SeqCst);
        let state = if up { "up" } else { "starting" };
        Ready { ready: up, upstreams: Map::from_iter([("demo".to_string(), Value::from(state))]), state: None }
    }));

    assert_eq!(get(&router, HEALTHZ_PATH).await, (StatusCode::OK, json!({"status": "ok"})));
    assert_eq!(
        get(&router, READYZ_PATH).await,
        (StatusCode::SERVICE_UNAVAILABLE, json!({"status": "starting", "upstreams": {"demo": "starting"}}))
    );
    ready.store(true, Ordering::SeqCst);
    assert_eq!(
        get(&router, READYZ_PATH).await,
        (StatusCode::OK, json!({"status": "ready", "upstreams": {"demo": "up"}}))
    );
}
