//! A TCP fault proxy on 127.0.0.1: forward, delay, black-hole, hold replies,
//! reset.
//!
//! Point a client at [`FaultProxy::port`] instead of the server's; then
//! [`set`](FaultProxy::set) a [`Fault`] to simulate a slow link or a partition, or
//! [`reset`](FaultProxy::reset) to cut every connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};

use crate::TestkitError;

/// Open connections: the task pumping each, and a handle on its client socket.
type Connections = Arc<Mutex<Vec<(AbortHandle, Option<std::net::TcpStream>)>>>;

/// What the proxy does with bytes in either direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// Pass them on.
    Forward,
    /// Pass each chunk on after this delay.
    Delay(Duration),
    /// Hold them (connections stay open, nothing arrives): a partition.
    BlackHole,
    /// Pass requests on to the server but hold its replies: the server acts on
    /// what it is sent and the client hears nothing back (a reply lost after
    /// the request ran). A [`reset`](FaultProxy::reset) then drops what was held.
    HoldReplies,
}

/// Which way a pump carries bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    ToServer,
    ToClient,
}

/// A running proxy. Stops, and closes every connection, on drop.
#[derive(Debug)]
pub struct FaultProxy {
    port: u16,
    fault: watch::Sender<Fault>,
    connections: Connections,
    accept: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on a free 127.0.0.1 port and forwards to 127.0.0.1:`target`.
    ///
    /// # Errors
    ///
    /// An I/O error if it cannot listen.
    pub async fn start(target: u16) -> Result<Self, TestkitError> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let (fault, rx) = watch::channel(Fault::Forward);
        let connections: Connections = Arc::default();
        let conns = connections.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)).await else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                // A std handle on the client socket lets `reset` send an RST.
                let reset_handle = client
                    .into_std()
                    .ok()
                    .and_then(|s| s.try_clone().ok().map(|c| (s, c)));
                let Some((client_std, handle)) = reset_handle else {
                    continue;
                };
                let Ok(client) = TcpStream::from_std(client_std) else {
                    continue;
                };
                let (cr, cw) = client.into_split();
                let (sr, sw) = server.into_split();
                let (rx1, rx2) = (rx.clone(), rx.clone());
                let task = tokio::spawn(async move {
                    tokio::join!(
                        pump(cr, sw, rx1, Way::ToServer),
                        pump(sr, cw, rx2, Way::ToClient)
                    );
                });
                conns
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((task.abort_handle(), Some(handle)));
            }
        });
        Ok(Self {
            port,
            fault,
            connections,
            accept,
        })
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Changes what happens to bytes from now on (also for open connections).
    pub fn set(&self, fault: Fault) {
        self.fault.send_replace(fault);
    }

    /// Cuts every open connection with a TCP reset; new ones are still accepted.
    pub fn reset(&self) {
        let mut conns = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        for (task, socket) in conns.drain(..) {
            task.abort();
            if let Some(socket) = socket {
                let _ = linger_zero(&socket);
                let _ = socket.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// SO_LINGER 0, so closing sends RST instead of FIN.
fn linger_zero(socket: &std::net::TcpStream) -> std::io::Result<()> {
    #[allow(deprecated)]
    tokio::net::TcpSocket::from_std_stream(socket.try_clone()?).set_linger(Some(Duration::ZERO))
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.reset();
    }
}

async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut fault: watch::Receiver<Fault>,
    way: Way,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        loop {
            let now = *fault.borrow_and_update();
            match now {
                Fault::Forward => break,
                Fault::HoldReplies if way == Way::ToServer => break,
                Fault::Delay(d) => {
                    tokio::time::sleep(d).await;
                    break;
                }
                Fault::BlackHole | Fault::HoldReplies => {
                    if fault.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
