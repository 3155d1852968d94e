//! One script call, encoded once as its `EVALSHA` command and sent to as many
//! masters as it is the same for: a round's release is built once, not once per
//! master.

use std::marker::PhantomData;

use redis::aio::ConnectionManager;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, Script, ServerErrorKind, ToRedisArgs};

/// `EVALSHA <script's hash> <number of keys> <keys…> <args…>`, ready to send;
/// the script returns a `T`.
pub(crate) struct ScriptCall<'s, T> {
    script: &'s Script,
    cmd: Cmd,
    reply: PhantomData<fn() -> T>,
}

impl<'s, T: FromRedisValue> ScriptCall<'s, T> {
    /// A call of `script` on `keys`; its arguments follow with [`arg`](Self::arg).
    pub(crate) fn new(script: &'s Script, keys: &[&str]) -> Self {
        let mut cmd = Cmd::with_capacity(keys.len() + 10, 256);
        cmd.arg("EVALSHA")
            .arg(script.get_hash())
            .arg(keys.len())
            .arg(keys);
        Self {
            script,
            cmd,
            reply: PhantomData,
        }
    }

    /// Appends the script's next `ARGV` entry.
    pub(crate) fn arg(mut self, arg: impl ToRedisArgs) -> Self {
        self.cmd.arg(arg);
        self
    }

    /// Sends the call on `conn`. A master that lost its script cache (a restart,
    /// `SCRIPT FLUSH`) answers `NOSCRIPT`: the script is loaded there and the
    /// call sent once more, as [`Script::invoke_async`] does.
    pub(crate) async fn run(&self, mut conn: ConnectionManager) -> RedisResult<T> {
        match self.cmd.query_async(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.script.prepare_invoke().load_async(&mut conn).await?;
                self.cmd.query_async(&mut conn).await
            }
            done => done,
        }
    }
}
