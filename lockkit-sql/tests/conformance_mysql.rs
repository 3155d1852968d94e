//! The conformance suite against MariaDB (written with the MySQL driver).
