//! [`Call`]: one call of a Lua script, sent alone, or followed by `WAIT` in one
//! pipeline when grants and renewals must reach replicas (`wait_replicas`).
//!
//! `WAIT` counts the replicas that acknowledged the writes *of the connection it
//! is sent on*, so it must travel on the connection that ran the script, to the
//! node that ran it. Sent as a command of its own, a reconnect or a cluster
//! client's retry could carry it elsewhere, where it would count nothing we wrote
//! and acknowledge at once. In one pipeline with the script, both reach the same
//! node on the same connection, or fail together.

use redis::{Cmd, FromRedisValue, RedisResult, Script, ToRedisArgs};

use crate::connection::Conn;
use crate::replicas::ReplicaAck;

/// A script with its keys and arguments, ready to send.
pub(crate) struct Call<'a> {
    script: &'a Script,
    keys: Vec<String>,
    args: Vec<Vec<u8>>,
}

impl<'a> Call<'a> {
    pub(crate) fn new(script: &'a Script) -> Self {
        Self {
            script,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }

    /// Adds a key (`KEYS[i]`).
    pub(crate) fn key(&mut self, key: impl Into<String>) -> &mut Self {
        self.keys.push(key.into());
        self
    }

    /// Adds an argument (`ARGV[i]`).
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    fn evalsha(&self) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
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
        conn: &mut Conn,
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

    async fn send<T: FromRedisValue>(
        &self,
        conn: &mut Conn,
        ack: Option<ReplicaAck>,
    ) -> RedisResult<(T, Option<i64>)> {
        let Some(ack) = ack else {
            return Ok((self.evalsha().query_async(conn).await?, None));
        };
        let mut pipe = redis::pipe();
        pipe.add_command(self.evalsha()).add_command(ack.command());
        let (answer, acked): (T, i64) = pipe.query_async(conn).await?;
        Ok((answer, Some(acked)))
    }
}
