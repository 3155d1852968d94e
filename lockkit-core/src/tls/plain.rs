//! Whether a server that a TLS connect failed on speaks plain TCP: the hint a
//! user needs when a `rediss://`, `etcds://`, `zks://` or `consuls://` URL points
//! at a plain port, where the TLS client alone reports a timeout, a closed
//! connection or a "corrupt message".

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::LockError;

/// The first byte of a TLS record of an alert, and of a handshake: what a TLS
/// server answers anything with.
const TLS_RECORDS: [u8; 2] = [0x15, 0x16];

/// Sends `greeting`, a request in the backend's plain protocol (`PING\r\n` for
/// Redis), to `host_port` over plain TCP and waits at most `within` for an
/// answer: whether one came that is not TLS. A TLS server answers plain bytes
/// with an alert or not at all, so an answer in the plain protocol means the
/// server speaks plain TCP.
pub async fn speaks_plain_tcp(host_port: &str, greeting: &[u8], within: Duration) -> bool {
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(host_port).await.ok()?;
        stream.write_all(greeting).await.ok()?;
        let mut first = [0u8; 1];
        let n = stream.read(&mut first).await.ok()?;
        Some(n == 1 && !TLS_RECORDS.contains(&first[0]))
    };
    matches!(tokio::time::timeout(within, probe).await, Ok(Some(true)))
}

/// `e`, a failed TLS connect to `host_port`, with a hint when the server there
/// answers `greeting` in plain text within a second: "the server at
/// `host_port` does not speak TLS: use `plain_scheme`://". Other errors are
/// returned as they are.
pub async fn hint_if_plain(
    e: LockError,
    host_port: &str,
    greeting: &[u8],
    plain_scheme: &str,
) -> LockError {
    let LockError::Connection {
        driver,
        message,
        source,
    } = e
    else {
        return e;
    };
    let hint = if speaks_plain_tcp(host_port, greeting, Duration::from_secs(1)).await {
        format!(
            "; the server at {host_port} does not speak TLS: use {plain_scheme}:// (or \
             enable TLS on the server)"
        )
    } else {
        String::new()
    };
    LockError::Connection {
        driver,
        message: format!("{message}{hint}"),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_plain_answer_is_plain_and_an_alert_or_silence_is_not() {
        for (answer, plain) in [(&b"+PONG\r\n"[..], true), (&[0x15, 3, 3][..], false)] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let sent = answer.to_vec();
            tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 16];
                let _ = s.read(&mut buf).await;
                s.write_all(&sent).await.unwrap();
                let _ = s.read(&mut buf).await;
            });
            let seen = speaks_plain_tcp(&addr, b"PING\r\n", Duration::from_secs(5)).await;
            assert_eq!(seen, plain, "answer {answer:?}");
        }
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = silent.local_addr().unwrap().to_string();
        assert!(!speaks_plain_tcp(&addr, b"PING\r\n", Duration::from_millis(100)).await);
    }
}
