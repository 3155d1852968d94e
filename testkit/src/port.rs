//! Free ports on 127.0.0.1.

use std::net::TcpListener;

use crate::TestkitError;

/// A port on 127.0.0.1 that was free a moment ago (bind to 0, read, close).
///
/// # Errors
///
/// An I/O error if no port can be bound.
pub fn free_port() -> Result<u16, TestkitError> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
