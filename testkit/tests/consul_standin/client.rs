//! The client the stand-in's tests speak through: real HTTP, Consul's headers.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lockkit_testkit::ConsulStandIn;
use reqwest::Method;
use serde_json::Value;

/// One reply: status, `X-Consul-Index` (if any), headers and body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) index: Option<u64>,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) text: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A client for one stand-in, optionally sending a token.
pub(crate) struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    pub(crate) fn new(consul: &ConsulStandIn) -> Self {
        Self {
            http: http_client(),
            base: format!("http://{}", consul.addr()),
            token: None,
        }
    }

    pub(crate) fn with_token(consul: &ConsulStandIn, token: &str) -> Self {
        Self {
            token: Some(token.to_owned()),
            ..Self::new(consul)
        }
    }

    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .body(body)
            .timeout(Duration::from_secs(5));
        if let Some(t) = &self.token {
            r = r.header("X-Consul-Token", t);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let index = headers
            .get("X-Consul-Index")
            .map(|v| v.to_str().unwrap().parse().unwrap());
        let text = resp.text().await.unwrap();
        Reply {
            status,
            index,
            headers,
            text,
        }
    }

    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, "").await
    }

    pub(crate) async fn put(&self, path: &str, body: impl Into<reqwest::Body>) -> Reply {
        self.send(Method::PUT, path, body).await
    }

    pub(crate) async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, "").await
    }

    /// Creates a session from a JSON body; returns its ID.
    pub(crate) async fn session(&self, body: Value) -> String {
        let r = self.put("/v1/session/create", body.to_string()).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()["ID"].as_str().unwrap().to_owned()
    }

    /// `PUT /v1/kv/<key>?<query>` answering `true` or `false`.
    pub(crate) async fn kv_put(&self, key_and_query: &str, value: &str) -> bool {
        let r = self
            .put(&format!("/v1/kv/{key_and_query}"), value.to_owned())
            .await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.json().as_bool().unwrap()
    }

    /// The one entry at `key`, or `None` on 404.
    pub(crate) async fn kv_get(&self, key: &str) -> Option<Value> {
        let r = self.get(&format!("/v1/kv/{key}")).await;
        match r.status {
            404 => None,
            200 => Some(r.json()[0].clone()),
            s => panic!("GET {key}: {s} {}", r.text),
        }
    }

    pub(crate) async fn txn(&self, ops: Value) -> Reply {
        self.put("/v1/txn", ops.to_string()).await
    }
}

pub(crate) fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

pub(crate) fn value_of(entry: &Value) -> String {
    String::from_utf8(STANDARD.decode(entry["Value"].as_str().unwrap()).unwrap()).unwrap()
}

/// Polls `done` every 5 ms for at most 5 s.
pub(crate) async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A reqwest client. Built with every workspace feature, reqwest has rustls
/// without a crypto provider (lockkit-consul brings ring): install ring first.
pub(crate) fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
