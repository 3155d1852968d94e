//! Replies as Consul's agent sends them: plain-text errors, JSON, and the headers
//! of a read.

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, StatusCode};
use serde::Serialize;

use super::super::query::QueryOpts;

/// A reply under construction.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) content_type: Option<&'static str>,
    pub(crate) body: Bytes,
}

/// A handler's outcome: the early exits are replies too.
pub(crate) type Handled = Result<Reply, Reply>;

/// A plain-text reply.
pub(crate) fn text(status: StatusCode, body: impl Into<String>) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        content_type: Some("text/plain; charset=utf-8"),
        body: Bytes::from(body.into()),
    }
}

/// A reply with no body.
pub(crate) fn empty(status: StatusCode) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        content_type: None,
        body: Bytes::new(),
    }
}

/// A 200 with `value` as JSON (a 500 if it cannot be encoded).
pub(crate) fn json(value: &impl Serialize) -> Reply {
    match serde_json::to_vec(value) {
        Ok(body) => Reply {
            status: StatusCode::OK,
            headers: Vec::new(),
            content_type: Some("application/json"),
            body: Bytes::from(body),
        },
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// A 400 with `msg`.
pub(crate) fn bad_request(msg: impl Into<String>) -> Reply {
    text(StatusCode::BAD_REQUEST, msg)
}

/// A 500 with `msg`, as Consul reports its RPC errors.
pub(crate) fn server_error(msg: impl Into<String>) -> Reply {
    text(StatusCode::INTERNAL_SERVER_ERROR, msg)
}

impl Reply {
    pub(crate) fn status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The headers of a read (`setMeta`): index (never 0), leader, consistency.
    pub(crate) fn meta(self, index: u64, q: &QueryOpts, acl: bool) -> Self {
        self.header("X-Consul-Index", index.max(1).to_string())
            .header("X-Consul-KnownLeader", "true")
            .header("X-Consul-LastContact", "0")
            .header("X-Consul-Effective-Consistency", q.consistency)
            .header(
                "X-Consul-Default-ACL-Policy",
                if acl { "deny" } else { "allow" },
            )
    }

    pub(crate) fn into_response(self) -> Response<Full<Bytes>> {
        let mut response = Response::new(Full::new(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        if let Some(ct) = self.content_type
            && let Ok(v) = ct.parse()
        {
            headers.insert(hyper::header::CONTENT_TYPE, v);
        }
        for (name, value) in self.headers {
            if let Ok(v) = value.parse() {
                headers.append(name, v);
            }
        }
        response
    }
}
