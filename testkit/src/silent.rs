//! [`SilentServer`]: a TCP listener that accepts connections and never answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::TestkitError;

/// A server that accepts every connection on 127.0.0.1 and then says nothing:
/// what a client meets when a port is open but the service behind it hangs (a
/// stopped process behind a load balancer, a firewall that accepts and drops).
/// Every client must give up within its connect timeout instead of hanging.
///
/// It reads and discards what clients send, and holds their connections open until
/// it is dropped.
#[derive(Debug)]
pub struct SilentServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
    accept: JoinHandle<()>,
}

impl SilentServer {
    /// Listens on a free 127.0.0.1 port.
    ///
    /// # Errors
    ///
    /// An I/O error if it cannot listen.
    pub async fn start() -> Result<Self, TestkitError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let accept = tokio::spawn(async move {
            let mut held = tokio::task::JoinSet::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                held.spawn(async move {
                    let mut sink = tokio::io::sink();
                    let _ = tokio::io::copy(&mut socket, &mut sink).await;
                });
            }
        });
        Ok(Self {
            port,
            accepted,
            accept,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many connections it has accepted (a client that gave up before
    /// connecting proves nothing about its timeouts).
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        // Aborting the accept task drops the JoinSet, which aborts every held
        // connection.
        self.accept.abort();
    }
}
