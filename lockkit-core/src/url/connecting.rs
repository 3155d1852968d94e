//! A connect bounded by the connect timeout, however many steps and attempts it
//! makes: the one limit every networked driver keeps.

use std::future::Future;

use tokio::time::Instant;

use super::Timeouts;
use crate::{LockError, Result, human_duration};

impl Timeouts {
    /// Runs `connecting`, a driver's connect up to the server's first answer,
    /// within the connect timeout, whatever retries the client library makes
    /// inside it. Logs at DEBUG when it starts and how it ended.
    ///
    /// `server` names what is connected to, as an error may show it (`Redis at
    /// 127.0.0.1:6379`): never a password.
    ///
    /// # Errors
    ///
    /// `connecting`'s own error; when the connect timeout passes first, a
    /// [`LockError::Connection`] of `driver` that says so and names the option.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockkit_core::url::Timeouts;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let timeouts = Timeouts::new(Duration::from_millis(200), Duration::from_secs(1));
    /// let silent = std::future::pending::<lockkit::Result<()>>();
    /// let e = timeouts.connecting("demo", "a silent server", silent).await.unwrap_err();
    /// assert!(e.to_string().contains("no answer within 200 ms (connect_timeout_ms)"));
    /// # }
    /// ```
    pub async fn connecting<T>(
        &self,
        driver: &'static str,
        server: &str,
        connecting: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let started = Instant::now();
        tracing::debug!(
            "connecting to {server} (connect_timeout_ms={})",
            self.connect.as_millis()
        );
        let outcome = tokio::time::timeout(self.connect, connecting).await;
        let took = human_duration(started.elapsed());
        match outcome {
            Ok(Ok(connected)) => {
                tracing::debug!("connected to {server} in {took}");
                Ok(connected)
            }
            Ok(Err(e)) => {
                tracing::debug!("connecting to {server} failed after {took}: {e}");
                Err(e)
            }
            Err(_) => {
                tracing::debug!("connecting to {server}: no answer after {took}");
                Err(LockError::Connection {
                    driver,
                    message: format!(
                        "cannot connect to {server}: no answer within {} \
                         (connect_timeout_ms); is it listening on that port?",
                        human_duration(self.connect)
                    ),
                    source: None,
                })
            }
        }
    }
}
