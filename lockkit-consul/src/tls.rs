//! HTTPS for `consuls://`: the `tls_ca`, `tls_cert` and `tls_key` files (read and
//! checked when the URL is parsed, see [`lockkit_core::tls`]) given to reqwest's
//! rustls, with ring as the crypto provider. Without the `tls` feature a
//! `consuls://` URL is refused when it is parsed.

/// Adds the CA (instead of the platform's roots) and the client identity.
#[cfg(feature = "tls")]
pub(crate) fn configure(
    builder: reqwest::ClientBuilder,
    tls: &lockkit_core::tls::TlsFiles,
) -> Result<reqwest::ClientBuilder, lockkit_core::LockError> {
    use lockkit_core::LockError;
    use reqwest::{Certificate, Identity};
    let mut builder = builder.https_only(true);
    if let Some(ca) = &tls.ca {
        let certs = Certificate::from_pem_bundle(&ca.pem)
            .map_err(|e| LockError::Config(format!("tls_ca={}: {e}", ca.path)))?;
        builder = builder.tls_certs_only(certs);
    }
    if let Some(id) = &tls.identity {
        let mut pem = id.cert.pem.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&id.key.pem);
        let identity = Identity::from_pem(&pem).map_err(|e| {
            LockError::Config(format!(
                "tls_cert={} / tls_key={}: {e}",
                id.cert.path, id.key.path
            ))
        })?;
        builder = builder.identity(identity);
    }
    Ok(builder)
}

/// What to change when a request failed for TLS reasons (empty otherwise): a plain
/// `consul://` URL to an HTTPS agent, a certificate `tls_ca` does not verify, or a
/// client certificate the agent wants and did not get (or does not trust).
pub(crate) fn hint(message: &str, https: bool) -> &'static str {
    let m = message.to_ascii_lowercase();
    if !https {
        if m.contains("invalid http version") || m.contains("connection reset") {
            return " (the agent may speak HTTPS only: use consuls://…?tls_ca=PATH)";
        }
        return "";
    }
    if m.contains("invalid peer certificate")
        || m.contains("unknownissuer")
        || m.contains("badsignature")
    {
        " (TLS: the agent's certificate does not verify against tls_ca, or the system roots \
         without it; give the CA that signed it, for a host it names)"
    } else if m.contains("certificaterequired")
        || m.contains("unknownca")
        || m.contains("bad certificate")
    {
        " (TLS: the agent wants a client certificate it trusts: give tls_cert and tls_key)"
    } else if m.contains("connection was not ready")
        || m.contains("connection closed")
        || m.contains("connection reset")
        || m.contains("broken pipe")
    {
        // Under TLS 1.3 the agent checks a client certificate after the client has
        // finished its handshake: the refusal often arrives as a closed connection
        // instead of the alert, depending on timing.
        " (TLS: the agent closed the connection after the handshake; if it wants a \
         client certificate, give tls_cert and tls_key that its CA signed)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::hint;

    #[test]
    fn a_refused_client_certificate_is_named_whichever_way_it_arrives() {
        for message in [
            "client error (Connect): received fatal alert: CertificateRequired",
            "client error (Canceled): operation was canceled: connection was not ready",
            "client error (SendRequest): connection closed before message completed",
        ] {
            assert!(hint(message, true).contains("tls_cert"), "{message}");
        }
        assert!(hint("connection refused", true).is_empty());
        assert!(hint("invalid http version parsed", false).contains("consuls://"));
    }
}
