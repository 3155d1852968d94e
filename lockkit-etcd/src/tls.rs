//! TLS for `etcds://`: the `tls_ca`, `tls_cert` and `tls_key` URL options, read
//! and checked by [`lockkit_core::tls`] when the URL is parsed (the same names,
//! checks and errors as the Redis driver's `rediss://`). The certificates go to
//! etcd-client (tonic over rustls with the ring provider, or the
//! process's default rustls provider if the application installed one), which
//! verifies the server against `tls_ca` alone when it is given, else against the
//! system roots. Without the `tls` feature an `etcds://` URL is refused when it
//! is parsed.

use lockkit_core::tls::TlsFiles;

/// The TLS settings of an `etcds://` URL, files read and checked
/// ([`lockkit_core::tls`]).
#[derive(Clone)]
pub(crate) struct Tls(pub(crate) TlsFiles);

impl std::fmt::Debug for Tls {
    /// Paths only: never the key's contents.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = |p: &lockkit_core::tls::PemFile| p.path.clone();
        f.debug_struct("Tls")
            .field(
                "ca",
                &self
                    .0
                    .ca
                    .as_ref()
                    .map_or_else(|| "(system roots)".to_string(), path),
            )
            .field("cert", &self.0.identity.as_ref().map(|i| path(&i.cert)))
            .field("key", &self.0.identity.as_ref().map(|i| path(&i.key)))
            .finish()
    }
}

impl Tls {
    /// The settings for etcd-client (tonic's `ClientTlsConfig`).
    #[cfg(feature = "tls")]
    pub(crate) fn options(&self) -> etcd_client::TlsOptions {
        use etcd_client::{Certificate, Identity, TlsOptions};
        let mut tls = TlsOptions::new();
        tls = match &self.0.ca {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(&ca.pem)),
            None => tls.with_native_roots(),
        };
        if let Some(id) = &self.0.identity {
            tls = tls.identity(Identity::from_pem(&id.cert.pem, &id.key.pem));
        }
        tls
    }

    /// Whether the server is verified against `tls_ca` (else the system roots).
    pub(crate) fn has_ca(&self) -> bool {
        self.0.ca.is_some()
    }

    /// Whether a client certificate is presented.
    pub(crate) fn has_client_cert(&self) -> bool {
        self.0.identity.is_some()
    }
}

/// Advice to add to a connection error: for a TLS URL whose error is about a
/// certificate or the handshake, what to check; for a plain URL whose connection
/// was closed at once, that the server may want TLS.
pub(crate) fn hint(tls: Option<&Tls>, message: &str) -> String {
    let m = message.to_ascii_lowercase();
    // As displayed ("connection reset") or as an io::ErrorKind's Debug inside a
    // tonic error ("Kind(ConnectionReset)"), which is what a reset during the first
    // request shows.
    let closed = [
        "connection closed",
        "connection reset",
        "connectionreset",
        "broken pipe",
        "brokenpipe",
    ]
    .iter()
    .any(|c| m.contains(c));
    match tls {
        Some(tls)
            if m.contains("certificate")
                || m.contains("unknownissuer")
                || m.contains("handshake") =>
        {
            let roots = if tls.has_ca() {
                "a CA in tls_ca"
            } else {
                "a CA in the system roots (no tls_ca given)"
            };
            let client = if tls.has_client_cert() {
                ""
            } else {
                " A server started with --client-cert-auth also needs tls_cert and tls_key."
            };
            format!(
                " (TLS: is the server's certificate signed by {roots}, and does it name \
                 the host as written in the URL?{client})"
            )
        }
        Some(tls) if closed && !tls.has_client_cert() => {
            " (TLS: the server closed the connection: if it was started with \
             --client-cert-auth, give tls_cert and tls_key)"
                .into()
        }
        None if closed => {
            " (the server closed the connection: if it serves TLS, use etcds://)".into()
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::hint;

    #[test]
    fn a_plain_url_whose_connection_is_reset_or_closed_is_told_to_try_etcds() {
        for message in [
            "grpc request error: transport error: connection closed before message completed",
            "transport error, source: tonic::transport::Error(Transport, hyper::Error(Io, Kind(ConnectionReset)))",
            "error trying to connect: Connection reset by peer (os error 104)",
            "hyper::Error(Io, Kind(BrokenPipe))",
        ] {
            assert!(hint(None, message).contains("use etcds://"), "{message}");
        }
        assert_eq!(hint(None, "connection refused"), "");
    }
}
