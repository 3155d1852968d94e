//! The slice of Consul's HTTP API the driver uses, typed.

use std::time::Duration;

use base64::Engine;
use lockkit_core::{LockError, Result};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Deserialize;
use serde_json::json;

use crate::driver::NAME;
use crate::error::{backend, config_or_backend, http_error};
use crate::options::ConsulOptions;
use crate::txn_ops::{TxnOp, TxnOutcome, TxnReply};

/// One KV entry, as `GET /v1/kv/<key>` and `/v1/txn` return it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct KvEntry {
    #[serde(default)]
    pub(crate) key: String,
    #[serde(default)]
    pub(crate) create_index: u64,
    pub(crate) modify_index: u64,
    #[serde(default)]
    pub(crate) session: Option<String>,
    /// Base64, as Consul sends it.
    #[serde(default)]
    value: Option<String>,
}

impl KvEntry {
    /// The decoded value, if any.
    pub(crate) fn value(&self) -> Option<Vec<u8>> {
        let v = self.value.as_deref()?;
        base64::engine::general_purpose::STANDARD.decode(v).ok()
    }
}

/// A client of one Consul agent. `Debug` never shows the token.
#[derive(Clone)]
pub(crate) struct Api {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    datacenter: Option<String>,
    /// Each request; a blocking query gets it on top of its wait.
    request_timeout: Duration,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("datacenter", &self.datacenter)
            .finish_non_exhaustive()
    }
}

impl Api {
    pub(crate) fn new(options: &ConsulOptions) -> Result<Self> {
        // With TLS, reqwest is built without a crypto provider of its own (even
        // plain HTTP clients need one then): ring is ours, unless the application
        // installed a process default first.
        #[cfg(feature = "tls")]
        let _ = rustls::crypto::ring::default_provider().install_default();
        #[allow(unused_mut)] // without TLS, nothing more to set
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.timeouts.connect)
            .timeout(options.timeouts.request)
            .pool_idle_timeout(Duration::from_secs(30));
        // Without the `tls` feature no URL gets here with TLS settings.
        #[cfg(feature = "tls")]
        if let Some(tls) = &options.tls {
            builder = crate::tls::configure(builder, tls)?;
        }
        let http = builder
            .build()
            .map_err(|e| LockError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self::with_http(http, options))
    }

    /// The API through the application's `http` client: `options` give the
    /// agent's address, token and datacenter; every request carries its own
    /// timeout, whatever the client's.
    pub(crate) fn with_http(http: reqwest::Client, options: &ConsulOptions) -> Self {
        Self {
            http,
            base: options.base.clone(),
            token: options.token.clone(),
            datacenter: options.datacenter.clone(),
            request_timeout: options.timeouts.request,
        }
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .timeout(self.request_timeout);
        if let Some(token) = &self.token {
            r = r.header("X-Consul-Token", token);
        }
        if let Some(dc) = &self.datacenter {
            r = r.query(&[("dc", dc)]);
        }
        r
    }

    /// Sends `r` and returns the status, the `X-Consul-Index` and the body.
    async fn send(&self, r: RequestBuilder, what: &str) -> Result<(StatusCode, u64, String)> {
        let response = r.send().await.map_err(|e| LockError::Connection {
            driver: NAME,
            message: format!(
                "{what}: {}",
                http_error(e, self.request_timeout, self.base.starts_with("https://"))
            ),
            source: None,
        })?;
        let status = response.status();
        let index = response
            .headers()
            .get("X-Consul-Index")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let body = response.text().await.map_err(|e| LockError::Connection {
            driver: NAME,
            message: format!(
                "{what}: reading the reply: {}",
                http_error(e, self.request_timeout, self.base.starts_with("https://"))
            ),
            source: None,
        })?;
        match status {
            StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => Err(LockError::Config(format!(
                "{what}: Consul refused the ACL token ({}); check the token in the URL or CONSUL_HTTP_TOKEN",
                body.trim()
            ))),
            _ => Ok((status, index, body)),
        }
    }

    /// `GET /v1/status/leader`: is the agent there and does it know a leader?
    pub(crate) async fn leader(&self) -> Result<()> {
        let (status, _, body) = self
            .send(
                self.request(Method::GET, "/v1/status/leader"),
                "asking for the leader",
            )
            .await?;
        if status.is_success() && body.trim() != "\"\"" {
            Ok(())
        } else {
            Err(LockError::Connection {
                driver: NAME,
                message: format!("the Consul agent knows no leader ({status})"),
                source: None,
            })
        }
    }

    /// Creates a session; returns its id.
    pub(crate) async fn session_create(
        &self,
        ttl: Duration,
        lock_delay: Duration,
    ) -> Result<String> {
        let body = json!({
            "Name": "lockkit",
            "TTL": format!("{}ms", ttl.as_millis()),
            "Behavior": "delete",
            "LockDelay": format!("{}ms", lock_delay.as_millis()),
        });
        let what = "creating a session";
        let (status, _, text) = self
            .send(
                self.request(Method::PUT, "/v1/session/create").json(&body),
                what,
            )
            .await?;
        if !status.is_success() {
            return Err(config_or_backend(what, status, &text));
        }
        #[derive(Deserialize)]
        struct Created {
            #[serde(rename = "ID")]
            id: String,
        }
        let created: Created =
            serde_json::from_str(&text).map_err(|e| backend(what, status, &e.to_string()))?;
        Ok(created.id)
    }

    /// Renews a session; `false` when Consul no longer has it.
    pub(crate) async fn session_renew(&self, id: &str) -> Result<bool> {
        let what = "renewing the session";
        let (status, _, text) = self
            .send(
                self.request(Method::PUT, &format!("/v1/session/renew/{id}")),
                what,
            )
            .await?;
        match status {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            s => Err(backend(what, s, &text)),
        }
    }

    /// Destroys a session (its locks are deleted, then the lock-delay applies).
    pub(crate) async fn session_destroy(&self, id: &str) -> Result<()> {
        let what = "destroying the session";
        let (status, _, text) = self
            .send(
                self.request(Method::PUT, &format!("/v1/session/destroy/{id}")),
                what,
            )
            .await?;
        if status.is_success() {
            Ok(())
        } else {
            Err(backend(what, status, &text))
        }
    }

    /// Reads `key`; with `block = Some((index, wait))`, a blocking query that returns
    /// once the key's index passes `index`, or after `wait`. Returns the entry (if
    /// any) and the index to block on next.
    pub(crate) async fn kv_get(
        &self,
        key: &str,
        block: Option<(u64, Duration)>,
    ) -> Result<(Option<KvEntry>, u64)> {
        let mut r = self.request(Method::GET, &kv_path(key));
        if let Some((index, wait)) = block {
            r = r
                .query(&[
                    ("index", index.to_string()),
                    ("wait", format!("{}ms", wait.as_millis())),
                ])
                .timeout(wait + wait / 16 + self.request_timeout);
        }
        let what = "reading the lock key";
        let (status, index, text) = self.send(r, what).await?;
        match status {
            StatusCode::NOT_FOUND => Ok((None, index)),
            s if s.is_success() => {
                let mut entries: Vec<KvEntry> =
                    serde_json::from_str(&text).map_err(|e| backend(what, s, &e.to_string()))?;
                Ok((entries.pop(), index))
            }
            s => Err(backend(what, s, &text)),
        }
    }

    /// Reads every key under `prefix` (`?recurse`); with `block = Some((index,
    /// wait))`, a blocking query that returns once something under the prefix
    /// changes past `index` (a write, or a deletion's tombstone), or after `wait`.
    /// Returns the entries (none when the prefix is empty) and the index to block
    /// on next.
    pub(crate) async fn kv_list(
        &self,
        prefix: &str,
        block: Option<(u64, Duration)>,
    ) -> Result<(Vec<KvEntry>, u64)> {
        let mut r = self
            .request(Method::GET, &kv_path(prefix))
            .query(&[("recurse", "")]);
        if let Some((index, wait)) = block {
            r = r
                .query(&[
                    ("index", index.to_string()),
                    ("wait", format!("{}ms", wait.as_millis())),
                ])
                .timeout(wait + wait / 16 + self.request_timeout);
        }
        let what = "reading the semaphore's keys";
        let (status, index, text) = self.send(r, what).await?;
        match status {
            StatusCode::NOT_FOUND => Ok((Vec::new(), index)),
            s if s.is_success() => {
                let entries: Vec<KvEntry> =
                    serde_json::from_str(&text).map_err(|e| backend(what, s, &e.to_string()))?;
                Ok((entries, index))
            }
            s => Err(backend(what, s, &text)),
        }
    }

    /// Deletes `key` if its ModifyIndex is still `index` (a plain `DELETE ?cas=`
    /// also succeeds on a missing key, so this is a transaction). Returns whether it
    /// was deleted.
    pub(crate) async fn delete_at(&self, key: &str, index: u64) -> Result<bool> {
        let ops = [TxnOp::check_index(key, index), TxnOp::delete(key)];
        Ok(matches!(self.txn(&ops).await?, TxnOutcome::Applied(_)))
    }

    /// Runs a transaction (at most 64 operations).
    pub(crate) async fn txn(&self, ops: &[TxnOp]) -> Result<TxnOutcome> {
        let what = "running a KV transaction";
        let r = self.request(Method::PUT, "/v1/txn").json(ops);
        let (status, _, text) = self.send(r, what).await?;
        if !(status.is_success() || status == StatusCode::CONFLICT) {
            return Err(backend(what, status, &text));
        }
        let reply: TxnReply =
            serde_json::from_str(&text).map_err(|e| backend(what, status, &e.to_string()))?;
        match reply.errors {
            Some(errors) if !errors.is_empty() => Ok(TxnOutcome::RolledBack(
                errors.into_iter().map(|e| (e.op_index, e.what)).collect(),
            )),
            _ => Ok(TxnOutcome::Applied(
                reply
                    .results
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| r.kv)
                    .collect(),
            )),
        }
    }
}

/// The URL path of a KV key (made of URL-safe characters, see
/// [`crate::driver::kv_key`]).
fn kv_path(key: &str) -> String {
    format!("/v1/kv/{key}")
}
