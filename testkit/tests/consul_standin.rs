//! The Consul stand-in keeps Consul's documented HTTP semantics, over real HTTP:
//! sessions, TTL invalidation, lock-delay, behaviors, acquire/release/cas, the
//! transaction endpoint, blocking queries, indexes, ACLs, errors, pause and a lost
//! leader. One test binary; the cases are in `consul_standin/`, by subject.

#![cfg(test)] // Test code throughout: clippy.toml allows unwrap, expect and panic here.

#[path = "consul_standin/agent.rs"]
mod agent;
#[path = "consul_standin/client.rs"]
mod client;
#[path = "consul_standin/kv.rs"]
mod kv;
#[path = "consul_standin/locks.rs"]
mod locks;
#[path = "consul_standin/sessions.rs"]
mod sessions;
