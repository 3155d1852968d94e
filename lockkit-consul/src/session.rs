//! The driver's Consul session: one at a time, kept alive, replaced when it ends.
//!
//! Every lock is a KV key acquired with the session, so a hold lasts as long as
//! the session. A keep-alive task renews it whenever TTL/3 has passed without a
//! renewal (watchdog rounds renew it too; one request per session, however many
//! locks it carries). When Consul answers that the session is gone,
//! or no renewal has succeeded for a whole TTL (Consul may invalidate it from then
//! on), every hold of the session is signalled lost (invariant C3); the next
//! acquire creates a new session.
//!
//! The session knows nothing of its holds: it fires its one [`LossSignal`] when it
//! ends, and each hold's signal is a [`LossSignal::child`] of it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use lockkit_core::sync::lock;
use lockkit_core::{LossSignal, Result};
use tokio::sync::Mutex;
use tokio::time::{Instant, sleep, sleep_until};

use crate::api::Api;
use crate::options::ConsulOptions;
use crate::permit_sessions::PermitSessions;

/// One Consul session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: String,
    gone: AtomicBool,
    /// Fired when the session ends; every hold's signal is a child of it.
    loss: LossSignal,
    /// When the last successful renewal (or the create) was sent: Consul keeps the
    /// session at least one TTL from then (invariant C3).
    renewed_at: std::sync::Mutex<Instant>,
    /// How long Consul may keep this session's locks from others after its
    /// client stops renewing: Consul invalidates a session within twice its TTL,
    /// and then holds its locks back for the lock-delay.
    pub(crate) outlives_its_client: Duration,
}

impl Session {
    /// Whether the session is known (or must be assumed) to be invalidated.
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }

    /// A loss signal for a hold of this session: fired when the session ends, or
    /// on its own (the key found gone).
    pub(crate) fn hold_loss(&self) -> LossSignal {
        self.loss.child()
    }

    /// Records that the session is gone and signals its holds lost.
    pub(crate) fn end(&self, why: &str) {
        if !self.gone.swap(true, Ordering::SeqCst) {
            tracing::warn!("{why}");
        }
        self.loss.fire(why);
    }

    fn renewed_at(&self) -> Instant {
        *lock(&self.renewed_at)
    }

    fn renewed(&self, sent: Instant) {
        let mut at = lock(&self.renewed_at);
        *at = (*at).max(sent);
    }
}

/// Hands out the live session, creating one when there is none.
#[derive(Debug)]
pub(crate) struct Sessions {
    api: Api,
    options: ConsulOptions,
    current: Mutex<Option<Arc<Session>>>,
    /// The sessions permits use, spares included.
    pub(crate) permits: Arc<PermitSessions>,
}

impl Sessions {
    pub(crate) fn new(api: Api, options: ConsulOptions) -> Self {
        Self {
            api,
            options,
            current: Mutex::new(None),
            permits: Arc::default(),
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
        let session = self.start().await?;
        *current = Some(session.clone());
        Ok(session)
    }

    /// A new session beside the driver's own, kept alive the same way: for a
    /// second permit of one semaphore (see [`PermitSessions`]).
    pub(crate) async fn spare(&self) -> Result<Arc<Session>> {
        self.start().await
    }

    /// Creates a session and starts its keep-alive task.
    async fn start(&self) -> Result<Arc<Session>> {
        let sent = Instant::now();
        let id = self
            .api
            .session_create(self.options.session_ttl, self.options.lock_delay)
            .await?;
        let session = Arc::new(Session {
            id,
            gone: AtomicBool::new(false),
            loss: LossSignal::new(),
            renewed_at: std::sync::Mutex::new(sent),
            outlives_its_client: self.options.session_ttl * 2 + self.options.lock_delay,
        });
        tokio::spawn(keep_alive(
            self.api.clone(),
            Arc::downgrade(&session),
            self.options.session_ttl,
        ));
        tracing::debug!(ttl = ?self.options.session_ttl, "Consul session created");
        Ok(session)
    }

    /// Renews `session` now (the watchdog's one request per round).
    pub(crate) async fn renew(&self, session: &Session) -> Result<bool> {
        let sent = Instant::now();
        let alive = self.api.session_renew(&session.id).await?;
        if alive {
            session.renewed(sent);
        } else {
            session.end("Consul no longer has the session (invalidated)");
        }
        Ok(alive)
    }
}

/// Destroys `session` in the background (a spare no permit uses any more).
pub(crate) fn retire(api: &Api, session: Arc<Session>) {
    session.gone.store(true, Ordering::SeqCst);
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return; // no runtime: its TTL will end it
    };
    let api = api.clone();
    handle.spawn(async move {
        if let Err(e) = api.session_destroy(&session.id).await {
            tracing::debug!(error = %e, "destroying a spare session failed; its TTL will end it");
        }
    });
}

impl Drop for Sessions {
    fn drop(&mut self) {
        // Destroy the sessions so their locks are freed now rather than at their TTL.
        let mut doomed = self.permits.drain_spares();
        doomed.extend(self.current.get_mut().take());
        doomed.retain(|s| !s.is_gone());
        if doomed.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let api = self.api.clone();
            handle.spawn(async move {
                for session in doomed {
                    let _ = tokio::time::timeout(
                        Duration::from_secs(5),
                        api.session_destroy(&session.id),
                    )
                    .await;
                }
            });
        }
    }
}

/// Renews the session once TTL/3 has passed since its last renewal (by this task
/// or a watchdog round), until it is gone or dropped.
async fn keep_alive(api: Api, session: Weak<Session>, ttl: std::time::Duration) {
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
                return s.end("Consul no longer has the session (invalidated)");
            }
            Some(Err(e)) if Instant::now() < vouched_until => {
                tracing::debug!(error = %e, "session renewal failed; retrying");
                sleep(ttl / 10).await;
            }
            _ => {
                return s.end(
                    "the Consul session could not be renewed within its TTL; Consul may have invalidated it",
                );
            }
        }
    }
}
