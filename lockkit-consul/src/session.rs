//! The driver's Consul session: one at a time, kept alive, replaced when it ends.
//!
//! Every lock is a KV key acquired with the session, so a hold lasts as long as
//! the session. A keep-alive task renews it whenever TTL/3 has passed without a
//! renewal (watchdog rounds renew it too; one request per session, however many
//! locks it carries). When Consul answers that the session is gone,
//! or no renewal has succeeded for a whole TTL (Consul may invalidate it from then
//! on), every hold of the session is signalled lost; the next acquire creates a
//! new session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use lockkit_core::Result;
use tokio::sync::Mutex;
use tokio::time::{Instant, sleep, sleep_until};

use crate::api::Api;
use crate::holds::Holds;
use crate::options::ConsulOptions;

/// One Consul session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    gone: AtomicBool,
    /// When the last successful renewal (or the create) was sent: Consul keeps the
    /// session at least one TTL from then.
    renewed_at: std::sync::Mutex<Instant>,
}

impl Session {
    /// Whether the session is known (or must be assumed) to be invalidated.
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }

    fn renewed_at(&self) -> Instant {
        *self.renewed_at.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn renewed(&self, sent: Instant) {
        let mut at = self.renewed_at.lock().unwrap_or_else(|e| e.into_inner());
        *at = (*at).max(sent);
    }
}

/// Hands out the live session, creating one when there is none.
#[derive(Debug)]
pub(crate) struct Sessions {
    api: Api,
    options: ConsulOptions,
    holds: Weak<Holds>,
    current: Mutex<Option<Arc<Session>>>,
}

impl Sessions {
    pub(crate) fn new(api: Api, options: ConsulOptions, holds: Weak<Holds>) -> Self {
        Self {
            api,
            options,
            holds,
            current: Mutex::new(None),
        }
    }

    pub(crate) fn api(&self) -> &Api {
        &self.api
    }

    /// The session in use, if there is a live one (never creates one).
    pub(crate) async fn current(&self) -> Option<Arc<Session>> {
        self.current
            .lock()
            .await
            .as_ref()
            .filter(|s| !s.is_gone())
            .cloned()
    }

    /// The live session, or a new one.
    pub(crate) async fn get(&self) -> Result<Arc<Session>> {
        let mut current = self.current.lock().await;
        if let Some(s) = current.as_ref()
            && !s.is_gone()
        {
            return Ok(s.clone());
        }
        let sent = Instant::now();
        let id = self
            .api
            .session_create(self.options.session_ttl, self.options.lock_delay)
            .await?;
        let session = Arc::new(Session {
            id,
            gone: AtomicBool::new(false),
            renewed_at: std::sync::Mutex::new(sent),
        });
        tokio::spawn(keep_alive(
            self.api.clone(),
            Arc::downgrade(&session),
            self.options.session_ttl,
            self.holds.clone(),
        ));
        tracing::debug!(ttl = ?self.options.session_ttl, "Consul session created");
        *current = Some(session.clone());
        Ok(session)
    }

    /// Records that `session` is gone and signals its holds lost.
    pub(crate) fn end(&self, session: &Session, why: &str) {
        end(session, &self.holds, why);
    }

    /// Renews `session` now (the watchdog's one request per round).
    pub(crate) async fn renew(&self, session: &Session) -> Result<bool> {
        let sent = Instant::now();
        let alive = self.api.session_renew(&session.id).await?;
        if alive {
            session.renewed(sent);
        } else {
            self.end(session, "Consul no longer has the session (invalidated)");
        }
        Ok(alive)
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        // Destroy the session so its locks are freed now rather than at its TTL.
        let Some(session) = self.current.get_mut().take() else {
            return;
        };
        if session.is_gone() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let api = self.api.clone();
            handle.spawn(async move {
                let _ = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    api.session_destroy(&session.id),
                )
                .await;
            });
        }
    }
}

fn end(session: &Session, holds: &Weak<Holds>, why: &str) {
    if !session.gone.swap(true, Ordering::SeqCst) {
        tracing::warn!("{why}");
    }
    if let Some(holds) = holds.upgrade() {
        holds.fire_session(&session.id, why);
    }
}

/// Renews the session once TTL/3 has passed since its last renewal (by this task
/// or a watchdog round), until it is gone or dropped.
async fn keep_alive(
    api: Api,
    session: Weak<Session>,
    ttl: std::time::Duration,
    holds: Weak<Holds>,
) {
    loop {
        let due = {
            let Some(s) = session.upgrade() else { return };
            s.renewed_at() + ttl / 3
        };
        sleep_until(due).await;
        let Some(s) = session.upgrade() else { return };
        if s.is_gone() {
            return;
        }
        if Instant::now() < s.renewed_at() + ttl / 3 {
            continue; // a watchdog round renewed it meanwhile
        }
        let vouched_until = s.renewed_at() + ttl;
        let sent = Instant::now();
        let answer = tokio::select! {
            r = api.session_renew(&s.id) => Some(r),
            _ = sleep_until(vouched_until) => None,
        };
        match answer {
            Some(Ok(true)) => s.renewed(sent),
            Some(Ok(false)) => {
                return end(&s, &holds, "Consul no longer has the session (invalidated)");
            }
            Some(Err(e)) if Instant::now() < vouched_until => {
                tracing::debug!(error = %e, "session renewal failed; retrying");
                sleep(ttl / 10).await;
            }
            _ => {
                return end(
                    &s,
                    &holds,
                    "the Consul session could not be renewed within its TTL; Consul may have invalidated it",
                );
            }
        }
    }
}
