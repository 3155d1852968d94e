//! HTTP as Consul's agent speaks it (`agent/http.go`): requests with Go's path
//! and query decoding, replies with Consul's headers and plain-text errors, and
//! the routing of Go's `ServeMux` (exact paths, `/`-ended prefixes, 301 to a clean
//! path, 404 with an empty body, 405 with `Allow`).
//!
//! Status codes are Consul's: what its RPC layer reports (an invalid session, a TTL
//! out of range, an unparsable `cas`) is a 500 with the error text, as the agent's
//! `handleErr` sends it; only what the HTTP layer itself checks is a 400.
//!
//! [`request`] decodes requests, [`reply`] builds replies, [`routes`] sends each
//! to its handler.

mod reply;
mod request;
mod routes;

pub(super) use reply::{Handled, Reply, bad_request, empty, json, server_error, text};
pub(super) use request::{Req, query_escape};
pub(super) use routes::route;

/// The one datacenter.
pub(super) const DATACENTER: &str = "dc1";
