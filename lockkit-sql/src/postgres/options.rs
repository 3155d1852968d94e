//! [`PgOptions`]: where the lock table lives.

use crate::server_options::{ServerKind, ServerOptions};
use crate::table::{ServerUrl, TlsNames};

/// How a PostgreSQL URL is read.
pub(super) const URL: ServerUrl = ServerUrl {
    schemes: &["postgres", "postgresql"],
    example: "postgres://user:password@host:5432/db",
    client_options: &[
        "sslmode",
        "ssl-mode",
        "sslrootcert",
        "ssl-root-cert",
        "ssl-ca",
        "sslcert",
        "ssl-cert",
        "sslkey",
        "ssl-key",
        "statement-cache-capacity",
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "application_name",
        "options",
    ],
    session: "advisory",
    server: "PostgreSQL",
    database_required: false,
    pooler: true,
    tls: TlsNames {
        mode: "sslmode",
        ca: "sslrootcert",
        cert: "sslcert",
        key: "sslkey",
        disabled: "disable",
        verify: "verify-full",
        require: "require",
        plain_modes: &["disable", "allow", "prefer"],
        aliases: &[
            ("ssl-mode", "sslmode"),
            ("ssl-root-cert", "sslrootcert"),
            ("ssl-ca", "sslrootcert"),
            ("ssl-cert", "sslcert"),
            ("ssl-key", "sslkey"),
        ],
    },
};

/// PostgreSQL, for [`ServerOptions`].
#[derive(Debug)]
pub struct PgServer;

impl ServerKind for PgServer {
    type Db = sqlx::Postgres;
    const NAME: &'static str = "postgres";
    const OPTIONS: &'static str = "PgOptions";
    const URL: ServerUrl = URL;

    /// No `extra_float_digits` startup parameter (sqlx sends one by default):
    /// PgBouncer refuses every connection that sends it, and lockkit reads no
    /// floating-point value.
    fn client_defaults(
        options: sqlx::postgres::PgConnectOptions,
    ) -> sqlx::postgres::PgConnectOptions {
        options.extra_float_digits(None)
    }
}

/// Settings for [`super::PgDriver`]. `Debug` never shows the password.
pub type PgOptions = ServerOptions<PgServer>;

impl ServerOptions<PgServer> {
    /// Session-bound advisory locks instead of leases (see the `session` docs in
    /// the README): no TTL, freed when the holding session ends.
    pub fn advisory(self, on: bool) -> Self {
        self.session_mode(on)
    }

    /// Says that a transaction-mode pooler (PgBouncer's `pool_mode=transaction`)
    /// is between lockkit and PostgreSQL (`on`, as the URL's `pooler=transaction`
    /// does: statements then go as plain text, waiters poll, and advisory mode is
    /// refused), or that nothing sharing sessions is (`off`, as
    /// `pooler=none`). Unsaid, connecting finds out (see the module docs,
    /// invariant P4).
    pub fn transaction_pooler(mut self, on: bool) -> Self {
        self.settings.pooler = if on {
            crate::table::Pooler::Transaction
        } else {
            crate::table::Pooler::None
        };
        self
    }
}

/// lockkit's default settings (table `lockkit_locks`, leases), for
/// [`super::from_pool`]; the connection part is the client's own default.
impl Default for ServerOptions<PgServer> {
    fn default() -> Self {
        Self {
            connect: sqlx::postgres::PgConnectOptions::new(),
            settings: crate::table::ServerSettings::new("postgres://", URL),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::table::tests::check_without_tls;

    #[test]
    fn without_tls_the_modes_that_may_go_plain_connect_and_the_rest_name_the_feature() {
        check_without_tls(
            super::URL,
            &[
                "postgres://h/db",
                "postgres://h/db?sslmode=prefer",
                "postgres://h/db?sslmode=disable",
                "postgres://h/db?sslmode=allow",
            ],
            &[
                ("postgres://h/db?sslmode=require", "sslmode=require"),
                (
                    "postgres://h/db?ssl-mode=verify-full",
                    "sslmode=verify-full",
                ),
                ("postgres://h/db?sslrootcert=/ca.pem", "sslrootcert"),
            ],
        );
    }
}
