//! `Slots`: the responder's session slots and the clients waiting for one, without I/O: ids and instants
//! in, grants, evictions and refusals out.
//!
//! A slot is claimed once a client is authenticated (`Action::Admit` of its session). When every slot is
//! held, the newcomer is not refused at once: its handshake is held (it waits, within its own handshake
//! deadline, which its session keeps) and it is given a slot, first come first served, as soon as one is
//! released or a session that holds one has been idle (no test open, no message) for `evictable_after`;
//! that session is then closed to make room. A session idle for less, or running a test, is never closed
//! for another: an attacker cannot evict a client between two of its tests. Waiting is itself bounded: at
//! most `max_waiters` clients wait, and at most `max_waiters_per_address` from one address, so that one
//! host cannot fill the waiting room; beyond that a newcomer is refused at once.
//!
//! The driver (the responder's event loop) tells `Slots` what changes (a claim, a session idle or busy, a
//! session or waiter gone), takes the grants from [`Slots::poll_grant`] and wakes at
//! [`Slots::poll_timeout`], the instant an idle session becomes evictable while someone waits.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::{Budget, Refusal};

/// The sizes of the slots and of the waiting room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotConfig {
    /// Sessions served at once (`serve --max-sessions`).
    pub max_sessions: u32,
    /// Clients waiting for a slot at once (0: a full responder refuses at once).
    pub max_waiters: usize,
    /// Clients from one address waiting at once.
    pub max_waiters_per_address: usize,
    /// How long a session must have been idle before a waiting client may take its slot.
    pub evictable_after: Duration,
}

impl SlotConfig {
    /// `max_sessions` slots, as many places to wait, 8 of them per address, eviction after 1 s idle.
    pub fn new(max_sessions: u32) -> Self {
        Self {
            max_sessions,
            max_waiters: max_sessions as usize,
            max_waiters_per_address: 8,
            evictable_after: Duration::from_secs(1),
        }
    }
}

/// The answer to a claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The slot is the client's; when `evict` names a session, the driver closes it (`Ending::Evicted`):
    /// its slot is already the newcomer's.
    Granted {
        /// The idle session that makes room.
        evict: Option<u64>,
    },
    /// Every slot is held: the client waits (its session holds its handshake) for a grant from
    /// [`Slots::poll_grant`].
    Wait,
    /// The client cannot even wait: the waiting room is full.
    Refused(Refusal),
}

/// A slot given to a client that waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The client's session.
    pub id: u64,
    /// The idle session that makes room, to be closed by the driver.
    pub evict: Option<u64>,
}

/// A client waiting for a slot.
#[derive(Debug, Clone, Copy)]
struct Waiter {
    id: u64,
    address: Option<IpAddr>,
}

/// The slots held, by session, and the clients waiting, in order of arrival.
#[derive(Debug)]
pub struct Slots {
    config: SlotConfig,
    /// Sessions holding a slot, with the instant since which each is idle (`None`: busy).
    held: HashMap<u64, Option<Instant>>,
    waiting: VecDeque<Waiter>,
}

impl Slots {
    /// No slot held, nobody waiting.
    pub fn new(config: SlotConfig) -> Self {
        Self { config, held: HashMap::new(), waiting: VecDeque::new() }
    }

    /// Session `id`, from `address`, is authenticated and asks for a slot at `now`. A granted session
    /// starts busy (its welcome is on its way); tell [`Slots::set_idle`] when it idles.
    pub fn claim(&mut self, id: u64, address: Option<IpAddr>, now: Instant) -> Claim {
        if self.waiting.is_empty() {
            if self.has_room() {
                self.held.insert(id, None);
                return Claim::Granted { evict: None };
            }
            if let Some(victim) = self.evictable(now) {
                self.held.remove(&victim);
                self.held.insert(id, None);
                return Claim::Granted { evict: Some(victim) };
            }
        }
        if self.config.max_waiters == 0 {
            let limit = u64::from(self.config.max_sessions);
            return Claim::Refused(Refusal::BudgetSpent { budget: Budget::Sessions, limit });
        }
        if self.waiting.len() >= self.config.max_waiters {
            let limit = self.config.max_waiters as u64;
            return Claim::Refused(Refusal::BudgetSpent { budget: Budget::SessionWaiters, limit });
        }
        if self.waiting.iter().filter(|w| w.address == address).count() >= self.config.max_waiters_per_address {
            let limit = self.config.max_waiters_per_address as u64;
            return Claim::Refused(Refusal::BudgetSpent { budget: Budget::AddressWaiters, limit });
        }
        self.waiting.push_back(Waiter { id, address });
        Claim::Wait
    }

    /// Session `id`, holding a slot, has been idle since `since` (`None`: it is busy again).
    pub fn set_idle(&mut self, id: u64, since: Option<Instant>) {
        if let Some(idle) = self.held.get_mut(&id) {
            *idle = since;
        }
    }

    /// Session `id` ended: its slot, or its place in the waiting room, is free.
    pub fn release(&mut self, id: u64) {
        if self.held.remove(&id).is_none() {
            self.waiting.retain(|w| w.id != id);
        }
    }

    /// The next client to get a slot at `now`, if a slot is free or a session has idled long enough.
    pub fn poll_grant(&mut self, now: Instant) -> Option<Grant> {
        let next = self.waiting.front()?.id;
        let evict = if self.has_room() { None } else { Some(self.evictable(now)?) };
        self.waiting.pop_front();
        if let Some(victim) = evict {
            self.held.remove(&victim);
        }
        self.held.insert(next, None);
        Some(Grant { id: next, evict })
    }

    /// When a held slot becomes evictable for a waiting client (`None`: nobody waits, or no session idles).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.waiting.is_empty() || self.has_room() {
            return None;
        }
        self.held.values().flatten().min().map(|since| *since + self.config.evictable_after)
    }

    /// Slots held.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Whether session `id` holds a slot.
    pub fn holds(&self, id: u64) -> bool {
        self.held.contains_key(&id)
    }

    /// Clients waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn has_room(&self) -> bool {
        self.held.len() < self.config.max_sessions as usize
    }

    /// The session idle the longest, if at least `evictable_after` (ties: the lowest id).
    fn evictable(&self, now: Instant) -> Option<u64> {
        let (since, id) = self.held.iter().filter_map(|(id, since)| since.map(|s| (s, *id))).min()?;
        (now.saturating_duration_since(since) >= self.config.evictable_after).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn ip(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([127, 0, 0, last]))
    }

    /// Slots for `max` sessions and 8 waiters, each slot held by a session idle since `t0` (ids 1 to `max`).
    fn full(max: u32, t0: Instant) -> Slots {
        let mut slots = Slots::new(SlotConfig { max_waiters: 8, ..SlotConfig::new(max) });
        for id in 1..=u64::from(max) {
            assert_eq!(slots.claim(id, ip(2), t0), Claim::Granted { evict: None });
            slots.set_idle(id, Some(t0));
        }
        slots
    }

    #[test]
    fn a_newcomer_takes_a_free_slot_at_once() {
        let t0 = Instant::now();
        let mut slots = full(2, t0);
        slots.release(1);
        assert_eq!(slots.claim(9, ip(1), t0), Claim::Granted { evict: None });
        assert!(slots.holds(9) && slots.holds(2) && !slots.holds(1));
    }

    #[test]
    fn a_newcomer_to_a_full_responder_waits_until_a_slot_is_released() {
        let t0 = Instant::now();
        let mut slots = full(2, t0);
        slots.set_idle(1, None);
        slots.set_idle(2, None);
        assert_eq!(slots.claim(9, ip(1), t0), Claim::Wait);
        assert_eq!(slots.poll_grant(t0 + 60 * SECOND), None, "busy sessions are never evicted");
        assert_eq!(slots.poll_timeout(), None, "no idle session to wait for");
        slots.release(2);
        assert_eq!(slots.poll_grant(t0 + SECOND), Some(Grant { id: 9, evict: None }));
        assert_eq!((slots.held(), slots.waiting()), (2, 0));
    }

    #[test]
    fn sessions_idle_for_less_than_a_second_are_not_evicted_but_waited_for() {
        let t0 = Instant::now();
        let mut slots = full(64, t0);
        slots.set_idle(5, Some(t0 - SECOND / 2));
        assert_eq!(slots.claim(100, ip(1), t0), Claim::Wait, "nobody has idled 1 s yet");
        assert_eq!(slots.poll_grant(t0 + SECOND / 4), None);
        assert_eq!(slots.poll_timeout(), Some(t0 + SECOND / 2), "when session 5 will have idled 1 s");
        assert_eq!(slots.poll_grant(t0 + SECOND / 2), Some(Grant { id: 100, evict: Some(5) }));
        assert!(slots.holds(100) && !slots.holds(5));
        assert_eq!(slots.poll_timeout(), None, "nobody waits");
    }

    #[test]
    fn a_session_idle_long_enough_makes_room_at_once_for_the_first_comer() {
        let t0 = Instant::now();
        let mut slots = full(3, t0);
        slots.set_idle(2, Some(t0 - 5 * SECOND));
        assert_eq!(slots.claim(9, ip(1), t0), Claim::Granted { evict: Some(2) }, "the idlest goes");
        assert_eq!(slots.claim(10, ip(1), t0), Claim::Wait, "the others idled 0 s");
    }

    #[test]
    fn waiters_are_served_in_order_of_arrival() {
        let t0 = Instant::now();
        let mut slots = full(2, t0);
        for id in [7, 8, 9] {
            assert_eq!(slots.claim(id, ip(id as u8), t0), Claim::Wait);
        }
        slots.release(8);
        assert_eq!(slots.poll_grant(t0 + SECOND), Some(Grant { id: 7, evict: Some(1) }));
        assert_eq!(slots.poll_grant(t0 + SECOND), Some(Grant { id: 9, evict: Some(2) }), "8 left the queue");
        assert_eq!(slots.poll_grant(t0 + SECOND), None);
        assert_eq!(slots.claim(11, ip(1), t0 + SECOND), Claim::Wait, "7 and 9 are busy: their welcome is due");
    }

    #[test]
    fn the_waiting_room_is_bounded_in_all_and_per_address() {
        let t0 = Instant::now();
        let config = SlotConfig { max_waiters: 3, max_waiters_per_address: 2, ..SlotConfig::new(1) };
        let mut slots = Slots::new(config);
        assert_eq!(slots.claim(1, ip(1), t0), Claim::Granted { evict: None });
        assert_eq!(slots.claim(2, ip(9), t0), Claim::Wait);
        assert_eq!(slots.claim(3, ip(9), t0), Claim::Wait);
        let per_address = Refusal::BudgetSpent { budget: Budget::AddressWaiters, limit: 2 };
        assert_eq!(slots.claim(4, ip(9), t0), Claim::Refused(per_address));
        assert_eq!(slots.claim(5, ip(5), t0), Claim::Wait, "another address still may");
        let all = Refusal::BudgetSpent { budget: Budget::SessionWaiters, limit: 3 };
        assert_eq!(slots.claim(6, ip(6), t0), Claim::Refused(all));
        slots.release(2);
        assert_eq!(slots.claim(6, ip(6), t0), Claim::Wait, "a waiter that gave up leaves room");
    }

    #[test]
    fn without_a_waiting_room_a_full_responder_refuses_at_once() {
        let t0 = Instant::now();
        let mut slots = Slots::new(SlotConfig { max_waiters: 0, ..SlotConfig::new(1) });
        assert_eq!(slots.claim(1, None, t0), Claim::Granted { evict: None });
        let refusal = Refusal::BudgetSpent { budget: Budget::Sessions, limit: 1 };
        assert_eq!(slots.claim(2, None, t0), Claim::Refused(refusal));
    }
}
