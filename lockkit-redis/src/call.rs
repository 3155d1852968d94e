//! [`Call`]: one call of a Lua script, sent alone, or followed by `WAIT` in one
//! pipeline when grants and renewals must reach replicas (`wait_replicas`).
//!
//! `WAIT` counts the replicas that acknowledged the writes *of the connection it
//! is sent on*, so it must travel on the connection that ran the script, to the
//! node that ran it. Sent as a command of its own, a reconnect or a cluster
//! client's retry could carry it elsewhere, where it would count nothing we wrote
//! and acknowledge at once. In one pipeline with the script, both reach the same
//! node on the same connection, or fail together (invariant R5).

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, RedisResult, Script, ToRedisArgs};

use crate::replicas::ReplicaAck;

/// A script with its keys and arguments, ready to send: the `EVALSHA` command is
/// built as they are added, with no copy in between.
pub(crate) struct Call<'a> {
    script: &'a Script,
    evalsha: Cmd,
    /// Keys still to add before the first argument.
    keys_left: usize,
}

impl<'a> Call<'a> {
    /// A call of `script` with `keys` keys, to be added with [`key`](Self::key)
    /// before any argument.
    pub(crate) fn new(script: &'a Script, keys: usize) -> Self {
        // Room for the keys and about as many arguments, so that adding them
        // does not grow the command again and again.
        let mut evalsha = Cmd::with_capacity(3 + 2 * keys, 64 + 96 * keys);
        evalsha.arg("EVALSHA").arg(script.get_hash()).arg(keys);
        Self {
            script,
            evalsha,
            keys_left: keys,
        }
    }

    /// A call of `script` on `keys`, its arguments to follow.
    pub(crate) fn on_keys(script: &'a Script, keys: &[&str]) -> Self {
        let mut call = Self::new(script, keys.len());
        for key in keys {
            call.key(key);
        }
        call
    }

    /// Adds a key (`KEYS[i]`).
    pub(crate) fn key(&mut self, key: &str) -> &mut Self {
        debug_assert!(self.keys_left > 0, "more keys than announced");
        self.keys_left = self.keys_left.saturating_sub(1);
        self.evalsha.arg(key);
        self
    }

    /// Adds an argument (`ARGV[i]`), after every key.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        debug_assert_eq!(self.keys_left, 0, "an argument before the last key");
        self.evalsha.arg(arg);
        self
    }

    /// Runs the script on `conn`; with `ack`, followed by `WAIT` in the same
    /// pipeline, whose count of acknowledging replicas comes back with the
    /// script's answer. A server that lost the script (a restart, a promoted
    /// replica) is sent it once and asked again.
    ///
    /// # Errors
    ///
    /// The script's or the connection's error.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
        ack: Option<ReplicaAck>,
    ) -> RedisResult<(T, Option<i64>)> {
        match self.send(conn, ack).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                self.script.load_async(conn).await?;
                self.send(conn, ack).await
            }
            other => other,
        }
    }

    /// [`invoke`](Self::invoke) with no `WAIT`, on a connection of its own
    /// (a Redlock master's, cloned for the request): the script's answer.
    ///
    /// # Errors
    ///
    /// The script's or the connection's error.
    pub(crate) async fn run<T: FromRedisValue>(
        &self,
        mut conn: impl ConnectionLike,
    ) -> RedisResult<T> {
        Ok(self.invoke(&mut conn, None).await?.0)
    }

    async fn send<T: FromRedisValue>(
        &self,
        conn: &mut impl ConnectionLike,
        ack: Option<ReplicaAck>,
    ) -> RedisResult<(T, Option<i64>)> {
        let Some(ack) = ack else {
            return Ok((self.evalsha.query_async(conn).await?, None));
        };
        let mut pipe = redis::pipe();
        pipe.add_command(self.evalsha.clone())
            .add_command(ack.command());
        let (answer, acked): (T, i64) = pipe.query_async(conn).await?;
        Ok((answer, Some(acked)))
    }
}
