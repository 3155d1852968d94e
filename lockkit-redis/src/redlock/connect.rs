//! Redlock start-up: one lazily connected master each, the scripts loaded on a
//! quorum before `connect` returns (the rest in the background), and the wake
//! channels subscribed.

use std::sync::Arc;

use lockkit_core::{LockError, Result};

use super::NAME;
use super::driver::{Inner, RedlockDriver};
use super::fan_out::gather;
use super::master::{self, Master, Reply};
use super::options::RedlockOptions;
use super::quorum::{answered, failures};
use crate::keys::wake_prefix;
use crate::options::WakeMode;
use crate::scripts::Scripts;

impl RedlockDriver {
    /// Sets up one connection per master and waits until a quorum answers PING.
    /// Masters that are down stay configured and are retried on every request.
    ///
    /// # Errors
    ///
    /// [`LockError::Connection`] naming how many masters answered when fewer than a
    /// quorum did within a few seconds; [`LockError::Config`] if a master that
    /// answered has a `maxmemory-policy` other than `noeviction`, or one that
    /// cannot be read (see [`RedlockOptions::eviction`]).
    pub async fn connect(options: RedlockOptions) -> Result<Self> {
        let first = options.masters.first().cloned();
        match Self::connect_quorum(options).await {
            Err(e) => Err(crate::tls::hint_if_plain(e, first.as_slice(), "redlock").await),
            connected => connected,
        }
    }

    async fn connect_quorum(options: RedlockOptions) -> Result<Self> {
        let masters = options
            .masters
            .iter()
            .zip(options.shown.iter())
            .map(|(url, shown)| {
                Master::new(
                    url,
                    shown.clone(),
                    options.connect_timeout,
                    options.tls.as_ref(),
                    options.eviction,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let quorum = masters.len() / 2 + 1;
        // Start-up waits, for one connect timeout at most, for a quorum of masters
        // to load the scripts (a connection, with its one retry, and the
        // requests); the others are primed in the background.
        let scripts = Arc::new(Scripts::new());
        let replies = gather(
            masters
                .iter()
                .map(|m| (m, m.call(|c| master::prime(scripts.clone(), c)))),
            options.connect_timeout,
            |r| answered(r) >= quorum,
        )
        .await;
        // Masters still on their way get a little longer (a driver whose masters
        // are still connecting makes its first requests compete with that); after
        // that, the background.
        let replies: Vec<Reply<()>> =
            futures_util::future::join_all(masters.iter().zip(replies).map(|(m, reply)| {
                let scripts = scripts.clone();
                async move {
                    match reply {
                        Reply::Pending => {
                            m.timed(options.request_timeout, |c| master::prime(scripts, c))
                                .await
                        }
                        done => done,
                    }
                }
            }))
            .await;
        // A master that answered with an eviction policy that is refused is a
        // setting to fix: refused now, even if a quorum runs `noeviction`.
        if let Some(why) = masters.iter().find_map(Master::refused) {
            return Err(LockError::Config(why));
        }
        for (m, reply) in masters.iter().zip(&replies) {
            if !matches!(reply, Reply::Answered(_)) {
                m.prime_in_background(scripts.clone());
            }
        }
        if answered(&replies) < quorum {
            let failed = failures(&replies).join("; ");
            let hint = if options.tls.is_some()
                || options.masters.iter().any(|m| m.starts_with("rediss://"))
            {
                crate::tls::hint(&failed).to_string()
            } else {
                crate::tls::plain_hint(&failed, "redlocks")
            };
            return Err(LockError::Connection {
                driver: NAME,
                message: format!(
                    "cannot connect to Redlock: {} of {} masters answered, {quorum} needed ({failed}){hint}",
                    answered(&replies),
                    masters.len()
                ),
                source: None,
            });
        }
        let wake_prefix = wake_prefix(&options.prefix);
        let notify = options.wake == WakeMode::Notify;
        if notify {
            // The masters that answered are subscribed now (bounded); the rest,
            // and any that fails, in the background.
            let subscribed = futures_util::future::join_all(masters.iter().zip(&replies).map(
                |(m, reply)| async {
                    matches!(reply, Reply::Answered(_))
                        && m.subscribe(&wake_prefix, options.connect_timeout).await
                },
            ))
            .await;
            for (m, done) in masters.iter().zip(subscribed) {
                if !done {
                    m.subscribe_in_background(wake_prefix.clone());
                }
            }
        }
        Ok(Self {
            inner: Arc::new(Inner {
                masters,
                quorum,
                scripts,
                prefix: options.prefix,
                drift: options.drift,
                retry: options.retry,
                request_timeout: options.request_timeout,
                fence_seed: options.fence_seed,
                keys: options.keys,
                wake_prefix,
                notify,
            }),
        })
    }
}
