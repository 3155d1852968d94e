//! [`MySqlOptions`]: where the lock table lives.

use crate::server_options::{ServerKind, ServerOptions};
use crate::table::{ServerUrl, TlsNames};

/// How a MySQL URL is read.
pub(super) const URL: ServerUrl = ServerUrl {
    schemes: &["mysql", "mariadb"],
    example: "mysql://user:password@host:3306/db",
    client_options: &[
        "sslmode",
        "ssl-mode",
        "sslca",
        "ssl-ca",
        "sslcert",
        "ssl-cert",
        "sslkey",
        "ssl-key",
        "statement-cache-capacity",
        "socket",
        "timezone",
        "time-zone",
    ],
    session: "get_lock",
    server: "MySQL",
    database_required: true,
    pooler: false,
    tls: TlsNames {
        mode: "ssl-mode",
        ca: "ssl-ca",
        cert: "ssl-cert",
        key: "ssl-key",
        disabled: "DISABLED",
        verify: "VERIFY_IDENTITY",
        require: "REQUIRED",
        plain_modes: &["DISABLED", "PREFERRED"],
        aliases: &[
            ("sslmode", "ssl-mode"),
            ("sslca", "ssl-ca"),
            ("sslcert", "ssl-cert"),
            ("sslkey", "ssl-key"),
        ],
    },
};

/// MySQL and MariaDB, for [`ServerOptions`].
#[derive(Debug)]
pub struct MySqlServer;

impl ServerKind for MySqlServer {
    type Db = sqlx::MySql;
    const NAME: &'static str = "mysql";
    const OPTIONS: &'static str = "MySqlOptions";
    const URL: ServerUrl = URL;
}

/// Settings for [`super::MySqlDriver`]. `Debug` never shows the password.
pub type MySqlOptions = ServerOptions<MySqlServer>;

impl ServerOptions<MySqlServer> {
    /// Session-bound `GET_LOCK` locks instead of leases: no TTL, freed when the
    /// holding session ends.
    pub fn get_lock(self, on: bool) -> Self {
        self.session_mode(on)
    }
}

/// lockkit's default settings (table `lockkit_locks`, leases), for
/// [`super::from_pool`]; the connection part is the client's own default.
impl Default for ServerOptions<MySqlServer> {
    fn default() -> Self {
        Self {
            connect: sqlx::mysql::MySqlConnectOptions::new(),
            settings: crate::table::ServerSettings::new("mysql://", URL),
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
                "mysql://h/db",
                "mysql://h/db?ssl-mode=preferred",
                "mysql://h/db?ssl-mode=DISABLED",
            ],
            &[
                ("mysql://h/db?ssl-mode=REQUIRED", "ssl-mode=REQUIRED"),
                (
                    "mysql://h/db?sslmode=VERIFY_IDENTITY",
                    "ssl-mode=VERIFY_IDENTITY",
                ),
                ("mysql://h/db?ssl-ca=/ca.pem", "ssl-ca"),
            ],
        );
    }
}
