//! `Gate`: the caps on connections that are not yet authenticated, in total and per source address.
//!
//! Unauthenticated connections cost the responder a descriptor and a little memory each; a peer that opens
//! them faster than they time out must not lock everyone else out. At a cap, the gate does not refuse the
//! newcomer but closes the oldest connection that made the least progress: first those still without a
//! preamble, then those in their handshake. A flood of silent connections thus evicts itself, and a client
//! that sends its preamble and hello with its connection (every linkperf client does) gets through.
//! The gate only counts and chooses; the event loop closes.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// How far an unauthenticated connection has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// No whole preamble yet.
    Silent,
    /// A control session in its greeting or authentication.
    Greeting,
}

/// The unauthenticated connections, oldest first per stage.
pub(super) struct Gate {
    total_cap: usize,
    per_address_cap: usize,
    members: HashMap<u64, (Option<IpAddr>, Stage)>,
    per_address: HashMap<Option<IpAddr>, usize>,
    silent: VecDeque<u64>,
    greeting: VecDeque<u64>,
}

impl Gate {
    /// A gate with these caps (each at least 1).
    pub fn new(total_cap: usize, per_address_cap: usize) -> Self {
        Self {
            total_cap: total_cap.max(1),
            per_address_cap: per_address_cap.max(1),
            members: HashMap::new(),
            per_address: HashMap::new(),
            silent: VecDeque::new(),
            greeting: VecDeque::new(),
        }
    }

    /// Lets connection `id` from `address` in, returning the connections to close to make room for it.
    pub fn enter(&mut self, id: u64, address: Option<IpAddr>) -> Vec<u64> {
        let mut evicted = Vec::new();
        while self.per_address.get(&address).copied().unwrap_or(0) >= self.per_address_cap {
            match self.oldest_from(Some(address)) {
                Some(victim) => {
                    self.leave(victim);
                    evicted.push(victim);
                }
                None => break,
            }
        }
        while self.members.len() >= self.total_cap {
            match self.oldest_from(None) {
                Some(victim) => {
                    self.leave(victim);
                    evicted.push(victim);
                }
                None => break,
            }
        }
        self.members.insert(id, (address, Stage::Silent));
        *self.per_address.entry(address).or_default() += 1;
        self.silent.push_back(id);
        evicted
    }

    /// Connection `id` sent a control preamble: it is in its handshake now.
    pub fn greeting(&mut self, id: u64) {
        if let Some((_, stage)) = self.members.get_mut(&id) {
            *stage = Stage::Greeting;
            self.greeting.push_back(id);
            self.compact();
        }
    }

    /// Connection `id` is authenticated or closed: it no longer counts.
    pub fn leave(&mut self, id: u64) {
        let Some((address, stage)) = self.members.remove(&id) else { return };
        if let Some(count) = self.per_address.get_mut(&address) {
            *count -= 1;
            if *count == 0 {
                self.per_address.remove(&address);
            }
        }
        let _ = stage;
        self.compact();
    }

    /// Drops ids that left or moved on from the queues, once they hold more stale ids than live ones (so
    /// leaving is O(1) amortised, not a scan per connection).
    fn compact(&mut self) {
        if self.silent.len() + self.greeting.len() > 2 * self.members.len() + 64 {
            let members = &self.members;
            self.silent.retain(|id| members.get(id).is_some_and(|(_, s)| *s == Stage::Silent));
            self.greeting.retain(|id| members.get(id).is_some_and(|(_, s)| *s == Stage::Greeting));
        }
    }

    /// The oldest unauthenticated connection of the least progress, if any.
    #[cfg(test)]
    pub fn oldest(&self) -> Option<u64> {
        self.oldest_from(None)
    }

    /// How many unauthenticated connections there are.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// The oldest of the least progress, from `address` when given. (The queues may hold stale ids: a
    /// member is found in the queue of its present stage.)
    fn oldest_from(&self, address: Option<Option<IpAddr>>) -> Option<u64> {
        let in_stage = |stage: Stage| {
            move |id: &&u64| self.members.get(*id).is_some_and(|(m, s)| *s == stage && address.is_none_or(|a| *m == a))
        };
        let silent = self.silent.iter().find(in_stage(Stage::Silent));
        silent.or_else(|| self.greeting.iter().find(in_stage(Stage::Greeting))).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([127, 0, 0, last]))
    }

    #[test]
    fn a_flood_from_one_address_evicts_its_own_oldest_silent_connections() {
        let mut gate = Gate::new(100, 3);
        for id in 1..=3 {
            assert!(gate.enter(id, ip(1)).is_empty());
        }
        assert!(gate.enter(10, ip(2)).is_empty(), "another address is not affected");
        assert_eq!(gate.enter(4, ip(1)), vec![1]);
        assert_eq!(gate.enter(5, ip(1)), vec![2]);
        assert_eq!(gate.len(), 4);
    }

    #[test]
    fn connections_in_their_handshake_are_evicted_after_silent_ones() {
        let mut gate = Gate::new(3, 10);
        gate.enter(1, ip(1));
        gate.greeting(1);
        gate.enter(2, ip(2));
        gate.enter(3, ip(3));
        assert_eq!(gate.enter(4, ip(4)), vec![2], "the oldest silent one, not the older greeting one");
        gate.greeting(3);
        gate.greeting(4);
        assert_eq!(gate.enter(5, ip(5)), vec![1], "all are greeting: the oldest goes");
    }

    #[test]
    fn authenticated_connections_leave_the_count() {
        let mut gate = Gate::new(2, 2);
        gate.enter(1, ip(1));
        gate.enter(2, ip(1));
        gate.leave(1);
        gate.leave(1);
        assert!(gate.enter(3, ip(1)).is_empty());
        assert_eq!(gate.len(), 2);
        assert_eq!(gate.oldest(), Some(2));
    }
}
