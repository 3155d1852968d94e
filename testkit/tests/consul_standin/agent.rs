//! The agent around the store: ACL tokens, error replies, pause, a lost leader.

use std::time::Duration;

use lockkit_testkit::{ConsulStandIn, StandInOptions};
use reqwest::Method;
use serde_json::json;

use super::client::{Client, b64, http_client, value_of};

#[tokio::test]
async fn an_acl_token_is_required_when_configured() {
    let options = StandInOptions::default().with_acl_token("s3cret");
    let consul = ConsulStandIn::start_with(options).await.unwrap();
    let anonymous = Client::new(&consul);
    let wrong = Client::with_token(&consul, "guess");
    let good = Client::with_token(&consul, "s3cret");

    let r = anonymous.put("/v1/kv/k", "v").await;
    assert_eq!(r.status, 403);
    assert!(
        r.text.starts_with(
            "Permission denied: anonymous token lacks permission 'key:write' on \"k\""
        ),
        "{}",
        r.text
    );
    let r = wrong.put("/v1/kv/k", "v").await;
    assert_eq!((r.status, r.text.as_str()), (403, "ACL not found"));
    assert_eq!(anonymous.put("/v1/session/create", "").await.status, 403);

    assert!(good.kv_put("k", "v").await);
    assert_eq!(anonymous.get("/v1/kv/k?token=s3cret").await.status, 200);
    let bearer = http_client()
        .get(format!("http://{}/v1/kv/k", consul.addr()))
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status().as_u16(), 200);
    // Reads the anonymous token may not make are filtered, not refused.
    let id = good.session(json!({})).await;
    let r = anonymous.get(&format!("/v1/session/info/{id}")).await;
    assert_eq!((r.status, r.text.as_str()), (200, "[]"));
    let r = anonymous
        .txn(json!([{"KV": {"Verb": "set", "Key": "k", "Value": b64("x")}}]))
        .await;
    assert_eq!(r.status, 409);
    assert!(
        r.json()["Errors"][0]["What"]
            .as_str()
            .unwrap()
            .starts_with("Permission denied")
    );
    assert_eq!(value_of(&good.kv_get("k").await.unwrap()), "v");
    // The status endpoints need no token.
    let r = anonymous.get("/v1/status/leader").await;
    assert_eq!((r.status, r.json()), (200, json!("127.0.0.1:8300")));
}

#[tokio::test]
async fn errors_look_like_consuls() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    let r = c.get("/v1/nothing/here").await;
    assert_eq!((r.status, r.text.as_str()), (404, ""));
    let r = c.send(Method::POST, "/v1/kv/k", "").await;
    assert_eq!(
        (r.status, r.text.as_str()),
        (405, "method POST not allowed")
    );
    assert_eq!(r.header("Allow"), Some("OPTIONS,GET,PUT,DELETE"));
    let r = c.get("/v1/session/create").await;
    assert_eq!(r.status, 405);
    let r = c.put("/v1/kv/", "").await;
    assert_eq!((r.status, r.text.as_str()), (400, "Missing key name"));
    let r = c.get("/v1/kv/k?dc=elsewhere").await;
    assert_eq!((r.status, r.text.as_str()), (500, "No path to datacenter"));
    let r = c.get("/v1/kv/k?stale&consistent").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    // Keys are percent-decoded; `//` is redirected like Go's ServeMux does.
    assert!(c.kv_put("a%2Fb", "x").await);
    assert!(c.kv_get("a/b").await.is_some());
    let r = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("http://{}/v1/kv/a//b", consul.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 301);
    let r = c.get("/v1/kv/a/b?raw").await;
    assert_eq!((r.status, r.text.as_str()), (200, "x"));
}

#[tokio::test]
async fn pause_holds_replies_until_resume_and_drop_closes() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    assert_eq!(c.get("/v1/status/leader").await.status, 200);

    consul.pause();
    let held = {
        let c = Client::new(&consul);
        tokio::spawn(async move { c.get("/v1/status/leader").await.status })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.is_finished(), "answered while paused");
    consul.resume();
    let status = tokio::time::timeout(Duration::from_secs(2), held)
        .await
        .expect("not answered after resume")
        .unwrap();
    assert_eq!(status, 200);

    let url = format!("http://{}/v1/status/leader", consul.addr());
    drop(consul);
    let after = http_client()
        .get(url)
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(after.is_err(), "answered after drop");
}

/// While its servers have no leader, Consul answers what needs them `500 No
/// cluster leader` and writes nothing, and `/v1/status/leader` is `""`; once a
/// leader is elected it serves again.
#[tokio::test]
async fn without_a_leader_requests_are_refused_and_nothing_is_written() {
    let consul = ConsulStandIn::start().await.unwrap();
    let c = Client::new(&consul);
    consul.lose_leader();
    let put = c.put("/v1/kv/election/k", "v").await;
    assert_eq!((put.status, put.text.as_str()), (500, "No cluster leader"));
    assert_eq!(c.get("/v1/kv/election/k").await.status, 500);
    assert_eq!(c.get("/v1/status/leader").await.json(), json!(""));
    assert_eq!(consul.requests("PUT", "/v1/kv/"), 1, "refusals are counted");

    consul.elect_leader();
    assert_eq!(
        c.get("/v1/kv/election/k").await.status,
        404,
        "the refused write was not made"
    );
    assert_eq!(c.put("/v1/kv/election/k", "v").await.status, 200);
    assert_eq!(c.get("/v1/kv/election/k").await.status, 200);
}
