//! A lock's queue: its nodes, their order, and whom each waits for.
//!
//! With lockkit's recipe (others: [`crate::recipe`]), key `K` is the container
//! node `<root>/<escaped K>`: one node per key, whatever characters `K` holds
//! (`/` included). Its children are the queue, one ephemeral sequential node per
//! holder or waiter, named
//! `<mode>-<owner id>-<sequence>`: `w-` for the exclusive (write) lock, `r-` for a
//! shared (read) hold, `p<limit>-` for a permit of a semaphore of `limit`, the
//! owner's 32 hex digits, and the 10-digit sequence number ZooKeeper appends. The
//! owner in the name is how a retried create whose reply was lost finds the node it
//! made.

use lockkit_core::{LockMode, OwnerId};

use crate::recipe::uuid_form;

/// One child of a key's container node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueNode {
    pub(crate) name: String,
    pub(crate) mode: LockMode,
    pub(crate) sequence: i64,
}

impl QueueNode {
    /// Parses a child name; `None` for a node that is not sequential. A
    /// sequential node lockkit did not make (Curator's, kazoo's, anyone's) is an
    /// exclusive contender, lockkit never granting past it, unless it is a
    /// reader's of Curator's or kazoo's read-write lock (`__READ__`,
    /// `__rlock__`).
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(Self {
            name: name.to_string(),
            mode: own_mode(name).unwrap_or_else(|| foreign_mode(name)),
            sequence: sequence_of(name)?,
        })
    }

    /// Whether `owner` made this node (its id is in the name, as hex digits or,
    /// with `recipe=curator`, as a UUID).
    pub(crate) fn is_owned_by(&self, owner: &OwnerId) -> bool {
        self.name.contains(&owner.to_hex()) || self.name.contains(&uuid_form(owner))
    }
}

/// The mode of a sequential node lockkit did not make: shared for the readers of
/// Curator's and kazoo's read-write locks, exclusive for anything else.
fn foreign_mode(name: &str) -> LockMode {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
    if stem.ends_with("__READ__") || stem.ends_with("__rlock__") {
        LockMode::Shared
    } else {
        LockMode::Exclusive
    }
}

/// The mode of a node lockkit made (`<tag>-<32 hex digits>-<sequence>`); `None`
/// for any other name.
fn own_mode(name: &str) -> Option<LockMode> {
    let (rest, _) = name.rsplit_once('-')?;
    let (tag, owner) = rest.split_once('-')?;
    if owner.len() != 32 || !owner.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    match tag {
        "r" => Some(LockMode::Shared),
        "w" => Some(LockMode::Exclusive),
        _ => Some(LockMode::Permit {
            limit: tag.strip_prefix('p')?.parse().ok().filter(|l| *l > 0)?,
        }),
    }
}

/// The sequence number ZooKeeper appended to a sequential node's name: its last
/// 10 digits (19 once the counter passed 2^31); `None` for a name without one.
fn sequence_of(name: &str) -> Option<i64> {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let width = match digits {
        0..=9 => return None,
        10..=18 => 10,
        _ => 19,
    };
    name.get(name.len() - width..)?.parse().ok()
}

/// The queue: every sequential child of a key node, in sequence order.
pub(crate) fn queue(children: &[String]) -> Vec<QueueNode> {
    let mut q: Vec<QueueNode> = children
        .iter()
        .filter_map(|c| QueueNode::parse(c))
        .collect();
    q.sort_by_key(|n| n.sequence);
    q
}

/// What a node of the queue waits for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ahead<'a> {
    /// Nothing: it holds.
    Nothing,
    /// This node to go (or change).
    Node(&'a QueueNode),
    /// Any holder to go: the first permit waiter watches the queue itself.
    AnyHolder,
}

/// What the node at `index` of `queue` waits for (invariant Z1), watching one
/// thing so that a release wakes only whom it lets in (no herd):
/// - an exclusive node waits for the node just before it;
/// - a shared node for the nearest earlier node that is not shared;
/// - a permit for the nearest earlier node that is not a permit; behind permits
///   only, it holds among the first `limit`; the first waiter after them watches
///   the queue for any holder to go; a later one watches the node just before it,
///   which, once granted, touches its node to pass the turn on.
pub(crate) fn blocker(queue: &[QueueNode], index: usize) -> Ahead<'_> {
    let Some(earlier) = queue.get(..index) else {
        return Ahead::Nothing;
    };
    let nearest = |keep: fn(LockMode) -> bool| earlier.iter().rev().find(|n| !keep(n.mode));
    let found = match queue[index].mode {
        LockMode::Shared => nearest(|m| m == LockMode::Shared),
        LockMode::Permit { limit } => match nearest(|m| m.limit().is_some()) {
            Some(other) => Some(other),
            None if index < limit as usize => None,
            None if index == limit as usize => return Ahead::AnyHolder,
            None => earlier.last(),
        },
        _ => earlier.last(),
    };
    found.map_or(Ahead::Nothing, Ahead::Node)
}

/// The nodes that hold the lock now: the first node if it is exclusive, the
/// leading run of shared nodes, or the first `limit` of a leading run of permits.
pub(crate) fn holders(queue: &[QueueNode]) -> &[QueueNode] {
    let Some(first) = queue.first() else {
        return &[];
    };
    let run = |same: fn(LockMode) -> bool| queue.iter().take_while(|n| same(n.mode)).count();
    match first.mode {
        LockMode::Shared => &queue[..run(|m| m == LockMode::Shared)],
        LockMode::Permit { limit } => &queue[..run(|m| m.limit().is_some()).min(limit as usize)],
        _ => &queue[..1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue from one character per node: `w`, `r`, or a digit n for a permit of
    /// a semaphore of n.
    fn q(spec: &str) -> Vec<QueueNode> {
        let owner = OwnerId::new().to_hex();
        let names: Vec<String> = spec
            .chars()
            .enumerate()
            .map(|(i, c)| {
                let tag = if c.is_ascii_digit() {
                    format!("p{c}")
                } else {
                    c.to_string()
                };
                format!("{tag}-{owner}-{i:010}")
            })
            .collect();
        queue(&names)
    }

    fn node_at(ahead: Ahead<'_>) -> i64 {
        match ahead {
            Ahead::Node(n) => n.sequence,
            other => panic!("expected a node, got {other:?}"),
        }
    }

    #[test]
    fn readers_wait_for_the_nearest_earlier_writer_only() {
        let queue = q("wrrwr");
        assert_eq!(blocker(&queue, 0), Ahead::Nothing);
        assert_eq!(node_at(blocker(&queue, 1)), 0);
        assert_eq!(node_at(blocker(&queue, 2)), 0);
        assert_eq!(node_at(blocker(&queue, 3)), 2);
        assert_eq!(node_at(blocker(&queue, 4)), 3);
        let queue = q("rrw");
        assert_eq!(blocker(&queue, 1), Ahead::Nothing);
        assert_eq!(holders(&queue).len(), 2);
        assert_eq!(holders(&q("wr")).len(), 1);
    }

    #[test]
    fn permits_hold_up_to_the_limit_and_only_the_first_waiter_watches_them() {
        // Limit 2 ("2"): two hold, the third watches the queue, the fourth the third.
        let queue = q("2222");
        assert_eq!(blocker(&queue, 1), Ahead::Nothing);
        assert_eq!(blocker(&queue, 2), Ahead::AnyHolder);
        assert_eq!(node_at(blocker(&queue, 3)), 2);
        assert_eq!(holders(&queue).len(), 2);
        // Behind a writer, a permit waits for it; a writer waits for a permit.
        let queue = q("w22w");
        assert_eq!(node_at(blocker(&queue, 1)), 0);
        assert_eq!(node_at(blocker(&queue, 2)), 0);
        assert_eq!(node_at(blocker(&queue, 3)), 2);
        // A reader waits for a permit as for a writer.
        assert_eq!(node_at(blocker(&q("2r"), 1)), 0);
    }

    #[test]
    fn foreign_sequential_children_are_exclusive_but_readers_and_order_is_by_sequence() {
        let id = OwnerId::new();
        let owner = id.to_hex();
        let names = vec![
            format!("w-{owner}-0000000009"),
            "something-else".to_string(),
            format!("r-{owner}-0000000002"),
            format!("p0-{owner}-0000000003"),
            format!("p12-{owner}-0000000004"),
            "_c_3f9e0c1a-8b1f-4a53-9f3e-2b7c1d0e4a55-lock-0000000001".to_string(),
            "d41c__lock__0000000005".to_string(),
            "r-not-an-owner-0000000006".to_string(),
            "_c_3f9e0c1a-8b1f-4a53-9f3e-2b7c1d0e4a55-__READ__0000000007".to_string(),
            "9ab1__rlock__0000000008".to_string(),
            format!("_c_{}-__WRIT__0000000010", uuid_form(&id)),
        ];
        let queue = queue(&names);
        let seen: Vec<(i64, LockMode)> = queue.iter().map(|n| (n.sequence, n.mode)).collect();
        assert_eq!(
            seen,
            [
                (1, LockMode::Exclusive),
                (2, LockMode::Shared),
                (3, LockMode::Exclusive),
                (4, LockMode::Permit { limit: 12 }),
                (5, LockMode::Exclusive),
                (6, LockMode::Exclusive),
                (7, LockMode::Shared),
                (8, LockMode::Shared),
                (9, LockMode::Exclusive),
                (10, LockMode::Exclusive),
            ]
        );
        assert!(!queue[0].is_owned_by(&id));
        assert!(queue[1].is_owned_by(&id));
        assert!(queue[9].is_owned_by(&id), "a Curator-named node of ours");
        assert_eq!(holders(&queue).len(), 1, "the foreign node holds");
        assert_eq!(blocker(&queue, 1), Ahead::Node(&queue[0]));
    }

    #[test]
    fn a_sequence_is_the_last_ten_digits() {
        assert_eq!(sequence_of("lock-0000000042"), Some(42));
        assert_eq!(sequence_of("node70000000042"), Some(42));
        assert_eq!(sequence_of("lock-42"), None);
        assert_eq!(sequence_of("x-9223372036854775807"), Some(i64::MAX));
    }
}
