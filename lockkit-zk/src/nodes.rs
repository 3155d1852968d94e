//! Where a lock lives in the tree, and what its queue nodes are called.
//!
//! Key `K` is the container node `<root>/<escaped K>`: one node per key, whatever
//! characters `K` holds (`/` included). Its children are the queue, one ephemeral
//! sequential node per holder or waiter, named
//! `<mode>-<owner id>-<sequence>`: `w-` for the exclusive (write) lock, `r-` for a
//! shared (read) hold, the owner's 32 hex digits, and the 10-digit sequence number
//! ZooKeeper appends. The owner in the name is how a retried create whose reply was
//! lost finds the node it made.

use lockkit_core::{LockKey, LockMode, OwnerId};

/// The container node of `key` under `root` (the key as one node name, see
/// [`LockKey::to_segment`]).
pub(crate) fn key_dir(root: &str, key: &LockKey) -> String {
    format!("{root}/{}", key.to_segment())
}

/// The name prefix (before the sequence number) of `owner`'s node in `mode`.
pub(crate) fn node_prefix(mode: LockMode, owner: &OwnerId) -> String {
    format!("{}-{}-", mode_tag(mode), owner.to_hex())
}

fn mode_tag(mode: LockMode) -> char {
    match mode {
        LockMode::Shared => 'r',
        _ => 'w',
    }
}

/// One child of a key's container node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueNode {
    pub(crate) name: String,
    pub(crate) mode: LockMode,
    pub(crate) sequence: i64,
}

impl QueueNode {
    /// Parses a child name; `None` for a node lockkit did not make.
    pub(crate) fn parse(name: &str) -> Option<Self> {
        let (rest, seq) = name.rsplit_once('-')?;
        let (tag, _owner) = rest.split_once('-')?;
        let mode = match tag {
            "r" => LockMode::Shared,
            "w" => LockMode::Exclusive,
            _ => return None,
        };
        Some(Self {
            name: name.to_string(),
            mode,
            sequence: seq.parse().ok()?,
        })
    }

    /// Whether `owner` made this node.
    pub(crate) fn is_owned_by(&self, owner_hex: &str) -> bool {
        self.name.get(2..2 + owner_hex.len()) == Some(owner_hex)
    }
}

/// The queue: lockkit's children of a key node, in sequence order.
pub(crate) fn queue(children: &[String]) -> Vec<QueueNode> {
    let mut q: Vec<QueueNode> = children
        .iter()
        .filter_map(|c| QueueNode::parse(c))
        .collect();
    q.sort_by_key(|n| n.sequence);
    q
}

/// What the node at `index` of `queue` waits for: `None` when it holds the lock,
/// else the one node it watches. An exclusive node waits for the node just before
/// it; a shared node waits only for the nearest earlier exclusive node, so readers
/// share and each waiter watches exactly one node (no herd).
pub(crate) fn blocker(queue: &[QueueNode], index: usize) -> Option<&QueueNode> {
    let earlier = queue.get(..index)?;
    match queue.get(index)?.mode {
        LockMode::Shared => earlier.iter().rev().find(|n| n.mode != LockMode::Shared),
        _ => earlier.last(),
    }
}

/// The nodes that hold the lock now: the first node if it is exclusive, else the
/// leading run of shared nodes.
pub(crate) fn holders(queue: &[QueueNode]) -> &[QueueNode] {
    match queue.first() {
        None => &[],
        Some(first) if first.mode != LockMode::Shared => &queue[..1],
        Some(_) => {
            let run = queue
                .iter()
                .take_while(|n| n.mode == LockMode::Shared)
                .count();
            &queue[..run]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(spec: &str) -> Vec<QueueNode> {
        let owner = OwnerId::new().to_hex();
        let names: Vec<String> = spec
            .chars()
            .enumerate()
            .map(|(i, c)| format!("{c}-{owner}-{i:010}"))
            .collect();
        queue(&names)
    }

    #[test]
    fn keys_become_one_safe_node_name() {
        let k = |s: &str| key_dir("/lockkit", &LockKey::new(s).unwrap());
        assert_eq!(k("inventory:sku-42"), "/lockkit/inventory:sku-42");
        assert_eq!(k("a/b c"), "/lockkit/a%2Fb%20c");
        assert_eq!(k(".."), "/lockkit/..%00");
        assert_eq!(k("é"), "/lockkit/%C3%A9");
    }

    #[test]
    fn readers_wait_for_the_nearest_earlier_writer_only() {
        let queue = q("wrrwr");
        assert_eq!(blocker(&queue, 0), None);
        assert_eq!(blocker(&queue, 1).unwrap().sequence, 0);
        assert_eq!(blocker(&queue, 2).unwrap().sequence, 0);
        assert_eq!(blocker(&queue, 3).unwrap().sequence, 2);
        assert_eq!(blocker(&queue, 4).unwrap().sequence, 3);
        let queue = q("rrw");
        assert_eq!(blocker(&queue, 1), None);
        assert_eq!(holders(&queue).len(), 2);
        assert_eq!(holders(&q("wr")).len(), 1);
    }

    #[test]
    fn foreign_children_are_ignored_and_order_is_by_sequence() {
        let owner = OwnerId::new().to_hex();
        let names = vec![
            format!("w-{owner}-0000000009"),
            "something-else".to_string(),
            format!("r-{owner}-0000000002"),
        ];
        let queue = queue(&names);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue[0].sequence, 2);
        assert!(queue[0].is_owned_by(&owner));
    }
}
