//! TLS for `rediss://`: the `tls_ca`, `tls_cert` and `tls_key` URL options, and the
//! one place a `redis::Client` is built from a node URL and those settings.
//!
//! The files are read and checked when the URL is parsed, so a wrong path or a file
//! that is not PEM is reported at once, naming the option and the path. The
//! certificates go to the redis crate (rustls with the ring provider), which verifies
//! the server against `tls_ca` alone when it is given, else against the system roots.
//!
//! Without the `tls` feature a TLS URL is refused when it is parsed, so nothing
//! past [`load`] ever holds [`Certs`].

use lockkit_core::LockError;
use lockkit_core::tls::{Scheme, TlsPaths};

/// The certificates a TLS URL gave, in the redis crate's form.
#[cfg(feature = "tls")]
pub(crate) type Certs = redis::TlsCertificates;

/// The certificates a TLS URL gave: none can exist in a build without TLS.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) enum Certs {}

/// Reads and checks the TLS files of a URL (see [`lockkit_core::tls`]), for the
/// redis crate. `None` when no option was given (a `rediss://` connection then
/// verifies the server against the system roots). `scheme` is the URL's
/// (`"rediss-cluster"`).
///
/// # Errors
///
/// [`LockError::InvalidUrl`] for options on a plain URL (telling it to use
/// `instead`, e.g. `"redlocks:// instead of redlock://"`), or a client
/// certificate without its key (or the reverse); [`LockError::Config`] naming
/// the option and the path for a file that cannot be read or holds no valid PEM,
/// and for a TLS URL in a build without the `tls` feature.
pub(crate) fn load(
    paths: TlsPaths,
    url: &str,
    scheme: &str,
    tls_scheme: bool,
    instead: &str,
) -> Result<Option<Certs>, LockError> {
    let bad = |why: &str| LockError::invalid_url(url, why);
    let scheme = Scheme {
        name: scheme,
        tls: tls_scheme,
        built: cfg!(feature = "tls"),
        instead,
    };
    let files = paths.for_scheme(&scheme, &bad)?;
    #[cfg(feature = "tls")]
    {
        use lockkit_core::tls::TlsFiles;
        Ok(files
            .filter(|f| f.ca.is_some() || f.identity.is_some())
            .map(|TlsFiles { ca, identity }| redis::TlsCertificates {
                client_tls: identity.map(|id| redis::ClientTlsConfig {
                    client_cert: id.cert.pem,
                    client_key: id.key.pem,
                }),
                root_cert: ca.map(|ca| ca.pem),
            }))
    }
    #[cfg(not(feature = "tls"))]
    {
        // for_scheme refused every TLS scheme: no files here.
        debug_assert!(files.is_none());
        Ok(None)
    }
}

/// Advice to add to the connection error of a plain (`redis://`) URL when the
/// server hung up on it, as a TLS-only server does: use `tls_scheme` (empty
/// otherwise).
pub(crate) fn plain_hint(message: &str, tls_scheme: &str) -> String {
    let m = message.to_ascii_lowercase();
    if m.contains("reset by peer") || m.contains("broken pipe") || m.contains("unexpected eof") {
        format!(" (if the server accepts TLS connections only, use {tls_scheme}://)")
    } else {
        String::new()
    }
}

/// Advice to add to a connection error about a certificate (empty otherwise).
pub(crate) fn hint(message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    if m.contains("certificate") || m.contains("unknownissuer") {
        " (TLS: is the server's certificate signed by a CA in tls_ca, or in the system \
         roots without tls_ca, and does it name the host in the URL? A server that \
         requires a client certificate needs tls_cert and tls_key)"
    } else {
        ""
    }
}

/// Makes ring the process's rustls crypto provider, once, unless the application
/// installed one already (then that one is used).
#[cfg(feature = "tls")]
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // An error means a provider is installed already: fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Nothing to install in a build without TLS.
#[cfg(not(feature = "tls"))]
pub(crate) fn install_crypto_provider() {}

/// A client for one node URL (`redis://` or `rediss://`, options stripped), with the
/// TLS certificates if any. The one place a `redis::Client` is built.
pub(crate) fn client(node: &str, certs: Option<&Certs>) -> redis::RedisResult<redis::Client> {
    if node.starts_with("rediss://") {
        install_crypto_provider();
    }
    match certs {
        #[cfg(feature = "tls")]
        Some(certs) => redis::Client::build_with_tls(node, certs.clone()),
        #[cfg(not(feature = "tls"))]
        Some(certs) => match *certs {},
        None => redis::Client::open(node),
    }
}

/// A cluster client's builder with the TLS certificates if any.
#[cfg(feature = "cluster")]
pub(crate) fn with_certs(
    builder: redis::cluster::ClusterClientBuilder,
    certs: Option<&Certs>,
) -> redis::cluster::ClusterClientBuilder {
    match certs {
        #[cfg(feature = "tls")]
        Some(certs) => builder.certs(certs.clone()),
        #[cfg(not(feature = "tls"))]
        Some(certs) => match *certs {},
        None => builder,
    }
}

/// `e`, a failed connect, with a hint when the first node is a `rediss://` URL
/// and the server there answers `PING` in plain text: use `plain_scheme`://.
#[cfg(feature = "tls")]
pub(crate) async fn hint_if_plain(e: LockError, nodes: &[String], plain_scheme: &str) -> LockError {
    let Some(rest) = nodes.first().and_then(|n| n.strip_prefix("rediss://")) else {
        return e;
    };
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    lockkit_core::tls::hint_if_plain(e, host_port, b"PING\r\n", plain_scheme).await
}

/// No TLS URL gets this far in a build without TLS: `e` as it is.
#[cfg(not(feature = "tls"))]
pub(crate) async fn hint_if_plain(e: LockError, _: &[String], _: &str) -> LockError {
    e
}
