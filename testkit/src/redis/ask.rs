//! One inline command to a node on 127.0.0.1, for the setups that watch and
//! fault their nodes (sentinels, cluster failover) without a Redis client.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::TestkitError;

/// Makes the master on `port` drop its links to its replicas (`CLIENT KILL TYPE
/// replica`); they must number `expected`. Replicas that are paused cannot
/// reconnect, so nothing it is written from now on reaches them.
pub(crate) async fn drop_replicas(port: u16, expected: usize) -> Result<(), TestkitError> {
    let dropped: Option<usize> = ask(port, "CLIENT KILL TYPE replica")
        .await
        .and_then(|reply| reply.first()?.parse().ok());
    match dropped {
        Some(n) if n == expected => Ok(()),
        other => Err(TestkitError::Setup {
            step: "cutting replicas off".into(),
            detail: format!("the master on {port} dropped {other:?} replicas, not {expected}"),
        }),
    }
}

/// The role (`master`, `slave`) the node on `port` reports.
pub(crate) async fn role(port: u16) -> Option<String> {
    ask(port, "ROLE").await?.into_iter().next()
}

/// Sends one inline command to the server on `port` and returns its reply's
/// strings, flattened: each bulk string or status of an array, or the lines of
/// a bulk string (`INFO`). `None` on any error or after 1 s.
pub(crate) async fn ask(port: u16, command: &str) -> Option<Vec<String>> {
    let exchange = async {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        let (read, mut write) = stream.into_split();
        write
            .write_all(format!("{command}\r\n").as_bytes())
            .await
            .ok()?;
        let mut lines = BufReader::new(read).lines();
        let mut out = Vec::new();
        let mut pending: usize = 1;
        while pending > 0 {
            let line = lines.next_line().await.ok()??;
            pending -= 1;
            match line.as_bytes().first()? {
                b'*' => pending += line[1..].parse::<usize>().unwrap_or(0),
                b'$' => {
                    if line != "$-1" {
                        // A bulk string: its text, in as many lines as it has.
                        let len: usize = line[1..].parse().ok()?;
                        let mut read = 0;
                        while read < len {
                            let part = lines.next_line().await.ok()??;
                            read += part.len() + 2;
                            out.push(part);
                        }
                    }
                }
                b'+' | b':' => out.push(line[1..].to_owned()),
                _ => return None,
            }
        }
        Some(out)
    };
    tokio::time::timeout(Duration::from_secs(1), exchange)
        .await
        .ok()
        .flatten()
}
