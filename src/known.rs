//! Every driver of lockkit's own, compiled into this build or not: the feature
//! that brings it, its URL schemes and its server's usual port. A driver
//! compiled in names itself ([`crate::driver::DRIVERS`]); this table is how a
//! URL whose driver is left out is answered with the feature to turn on, and a
//! bare `host:port` with the scheme it probably wants. A test checks that each
//! row of a driver compiled in matches the driver's own schemes.

/// One driver of lockkit's own.
struct Known {
    /// The facade's feature that compiles it in.
    feature: &'static str,
    /// Whether that feature is on in this build.
    compiled: bool,
    /// Its URL schemes, as the driver lists them.
    schemes: &'static [&'static str],
    /// The port its server listens on by default, if it has one.
    default_port: Option<u16>,
}

const KNOWN: &[Known] = &[
    Known {
        feature: "mem",
        compiled: cfg!(feature = "mem"),
        schemes: &["mem"],
        default_port: None,
    },
    Known {
        feature: "sqlite",
        compiled: cfg!(feature = "sqlite"),
        schemes: &["sqlite"],
        default_port: None,
    },
    Known {
        feature: "postgres",
        compiled: cfg!(feature = "postgres"),
        schemes: &["postgres", "postgresql"],
        default_port: Some(5432),
    },
    Known {
        feature: "mysql",
        compiled: cfg!(feature = "mysql"),
        schemes: &["mysql", "mariadb"],
        default_port: Some(3306),
    },
    Known {
        feature: "redis",
        compiled: cfg!(feature = "redis"),
        schemes: &[
            "redis",
            "rediss",
            "redis-cluster",
            "rediss-cluster",
            "redis-sentinel",
            "rediss-sentinel",
        ],
        default_port: Some(6379),
    },
    Known {
        feature: "redis",
        compiled: cfg!(feature = "redis"),
        schemes: &["redlock", "redlocks"],
        default_port: None,
    },
    Known {
        feature: "etcd",
        compiled: cfg!(feature = "etcd"),
        schemes: &["etcd", "etcds"],
        default_port: Some(2379),
    },
    Known {
        feature: "zk",
        compiled: cfg!(feature = "zk"),
        schemes: &["zk", "zookeeper", "zks"],
        default_port: Some(2181),
    },
    Known {
        feature: "consul",
        compiled: cfg!(feature = "consul"),
        schemes: &["consul", "consuls"],
        default_port: Some(8500),
    },
];

/// Why no compiled-in driver takes `url`, and what to write instead.
pub(crate) fn no_driver(url: &str) -> String {
    let compiled: Vec<&str> = crate::driver::DRIVERS
        .iter()
        .flat_map(|d| d.schemes.iter().copied())
        .collect();
    let compiled = compiled.join(", ");
    let known = || KNOWN.iter().flat_map(|d| d.schemes.iter().copied());
    // `127.0.0.1:6379` and `localhost:6379` have no scheme, though they have a colon.
    let scheme = lockkit_core::url_scheme(url)
        .map(str::to_ascii_lowercase)
        .filter(|s| url.contains("://") || lockkit_core::url::did_you_mean(s, known()).is_some());
    let Some(scheme) = scheme else {
        // `127.0.0.1:6379`, `localhost`: a host without a scheme.
        let port = url
            .rsplit_once(':')
            .and_then(|(_, p)| p.trim_end_matches('/').parse::<u16>().ok());
        let guess = port.and_then(|p| KNOWN.iter().find(|d| d.default_port == Some(p)));
        return match guess {
            Some(d) => format!(
                "no scheme; did you mean `{}`? Write SCHEME://…, with one of: {compiled}",
                lockkit_core::redact_url(&format!("{}://{url}", d.schemes[0]))
            ),
            None => format!("no scheme; write SCHEME://…, with one of: {compiled}"),
        };
    };
    if let Some(d) = KNOWN
        .iter()
        .find(|d| !d.compiled && d.schemes.contains(&scheme.as_str()))
    {
        return format!(
            "the `{scheme}` driver is not compiled in; enable lockkit's `{}` feature \
             (schemes compiled in: {compiled})",
            d.feature
        );
    }
    match lockkit_core::url::did_you_mean(&scheme, known()) {
        Some(near) => format!(
            "unknown scheme `{scheme}`; did you mean `{near}://`? (schemes compiled in: {compiled})"
        ),
        None => format!("unknown scheme `{scheme}`; schemes compiled in: {compiled}"),
    }
}

#[cfg(test)]
mod tests {
    use super::KNOWN;
    use crate::driver::DRIVERS;

    #[test]
    fn each_driver_compiled_in_has_its_row_with_its_own_schemes() {
        let rows: Vec<_> = KNOWN.iter().filter(|k| k.compiled).collect();
        assert_eq!(rows.len(), DRIVERS.len(), "one row per driver compiled in");
        for entry in DRIVERS {
            let row = rows.iter().find(|k| k.schemes == entry.schemes);
            assert!(
                row.is_some(),
                "no row lists {:?} ({})",
                entry.schemes,
                entry.name
            );
        }
    }
}
