//! The shared resource the workers protect: a [`FencedCell`] whose every write,
//! accepted or refused, is numbered and recorded.

use std::sync::{Arc, Mutex};

use lockkit_core::FencingToken;
use lockkit_core::fence::FencedCell;
use lockkit_core::sync::lock;
use tokio::time::Instant;

use super::record::{GrantId, Recorder, WriteRecord};

/// The protected resource: it accepts a write only if its token is at least the
/// highest it has seen (the [`FencedCell`] applications use), and records each
/// decision in the [`Recorder`] with its place in the resource's order.
#[derive(Debug, Clone)]
pub struct FencedResource {
    cell: Arc<Mutex<(u64, FencedCell<u64>)>>,
    recorder: Recorder,
}

impl FencedResource {
    /// A resource that has seen no token, recording into `recorder`.
    pub fn new(recorder: Recorder) -> Self {
        Self {
            cell: Arc::new(Mutex::new((0, FencedCell::new(0)))),
            recorder,
        }
    }

    /// Writes with `token` on behalf of `grant`; `true` if the resource accepted it.
    pub fn write(&self, grant: GrantId, token: u64) -> bool {
        let invoked = Instant::now();
        // The decision and its sequence number are taken under one lock, so `seq`
        // is the resource's real order.
        let mut cell = lock(&self.cell);
        let accepted = cell.1.write(FencingToken(token), |n| *n += 1).is_ok();
        let seq = cell.0;
        cell.0 += 1;
        let applied = Instant::now();
        drop(cell);
        self.recorder.write(WriteRecord {
            grant,
            token,
            invoked,
            seq,
            applied,
            accepted,
        });
        accepted
    }

    /// How many writes it accepted.
    pub fn accepted(&self) -> u64 {
        lock(&self.cell).1.get()
    }
}
