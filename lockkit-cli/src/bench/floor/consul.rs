//! The Consul floor (`consul://`): `PUT /v1/kv/<key>?acquire=<session>`, then
//! `PUT ?release=<session>` (two HTTP round trips, one session per client).

use std::time::Duration;

use lockkit::LockError;

use super::{Hold, RawLock};

/// What the Consul floor sends.
pub(super) const DESCRIPTION: &str =
    "raw PUT /v1/kv ?acquire= + PUT ?release= via reqwest, one session per client, same agent";

/// Where the Consul floor's keys live.
const CONSUL_FLOOR_PREFIX: &str = "lockkit-bench-floor";

/// A raw Consul client: base URL, ACL token and one session of its own.
pub(crate) struct ConsulFloor {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    session: String,
}

impl ConsulFloor {
    /// A client for a `consul://` URL, with a session of its own.
    pub(super) async fn connect(url: &str) -> Result<Self, LockError> {
        let options = lockkit::consul::ConsulOptions::from_url(url)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| LockError::Config(format!("cannot build an HTTP client: {e}")))?;
        let mut floor = Self {
            http,
            base: options.base_url().to_owned(),
            token: options.token().map(str::to_owned),
            session: String::new(),
        };
        let body = floor
            .send(
                reqwest::Method::PUT,
                "/v1/session/create".to_owned(),
                r#"{"TTL":"10s","Behavior":"delete","LockDelay":"0s"}"#.to_owned(),
            )
            .await?;
        let created: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
            LockError::Config(format!("Consul's session reply is not JSON ({e}): {body}"))
        })?;
        floor.session = created["ID"]
            .as_str()
            .ok_or_else(|| LockError::Config(format!("Consul's session reply has no ID: {body}")))?
            .to_owned();
        Ok(floor)
    }

    /// Sends one request; the body of a 2xx reply.
    async fn send(
        &self,
        method: reqwest::Method,
        path: String,
        body: String,
    ) -> Result<String, LockError> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .body(body);
        if let Some(token) = &self.token {
            request = request.header("X-Consul-Token", token);
        }
        let failed =
            |e: reqwest::Error| LockError::Config(format!("Consul floor: {}", e.without_url()));
        let response = request.send().await.map_err(failed)?;
        let status = response.status();
        let text = response.text().await.map_err(failed)?;
        if !status.is_success() {
            return Err(LockError::Config(format!(
                "Consul floor: {status}: {}",
                text.trim()
            )));
        }
        Ok(text)
    }

    fn key_path(key: &str, query: &str) -> String {
        format!(
            "/v1/kv/{CONSUL_FLOOR_PREFIX}/{}?{query}",
            key.replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_")
        )
    }
}

impl RawLock for ConsulFloor {
    async fn clean_up(&self, _keys: &[String]) {
        // A released key stays in Consul's KV: remove them all at once.
        let path = format!("/v1/kv/{CONSUL_FLOOR_PREFIX}?recurse=true");
        let _ = self
            .send(reqwest::Method::DELETE, path, String::new())
            .await;
    }

    async fn try_acquire(&self, key: &str, owner: &str) -> Result<Option<Hold>, LockError> {
        let path = Self::key_path(key, &format!("acquire={}", self.session));
        let reply = self
            .send(reqwest::Method::PUT, path, owner.to_owned())
            .await?;
        Ok((reply.trim() == "true").then(|| Hold(owner.to_owned())))
    }

    async fn release(&self, key: &str, held: Hold) -> Result<(), LockError> {
        let Hold(owner) = held;
        let path = Self::key_path(key, &format!("release={}", self.session));
        self.send(reqwest::Method::PUT, path, owner).await?;
        Ok(())
    }
}
