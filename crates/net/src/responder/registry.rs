//! `Registry`: the tests a responder is serving, by token, shared by every session and data thread.
//!
//! A data connection or datagram is served only while its token is registered and its deadline has not
//! passed, and only from the IP address of the control session that owns the token: a token sniffed on
//! the path cannot make the responder send to a third address. Releasing a token (test done, session
//! closed or over its time) shuts its stream connections down at once, so a busy echo thread needs no
//! clock on its data path to notice.
//!
//! The registry also keeps the responder's budgets for data paths: every admitted stream holds one data
//! path (a thread, a socket) and its buffer memory until its test is released, and a stream that would
//! exceed either budget is refused with the budget's name.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use linkperf_core::{Proto, WaitMode};
use linkperf_proto::{Budget, Refusal};
use socket2::Socket;

/// What kind of traffic a token admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TestKind {
    /// Echo every byte or datagram.
    Echo,
    /// Answer one byte per connection, then close.
    ConnectProbe,
    /// Sink or source bulk data, as each connection's header says.
    Throughput,
}

/// One registered test.
#[derive(Debug, Clone)]
pub(crate) struct TestEntry {
    pub session: u64,
    pub proto: Proto,
    pub kind: TestKind,
    pub wait: WaitMode,
    pub deadline: Instant,
    pub max_streams: u32,
    pub streams: u32,
    pub max_message_bytes: u64,
    /// The shared state of a throughput test.
    pub bulk: Option<std::sync::Arc<super::bulk::BulkState>>,
    /// The IP address of the control session's peer (`None` over a Unix socket): the only source of the
    /// test's data connections and datagrams, and the only destination of its traffic.
    pub peer: Option<IpAddr>,
}

/// The data-path budgets of the whole responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Most data paths (stream connections and UDP streams, each with a thread) at once.
    pub data_paths: u32,
    /// Most buffer memory of all data paths together, in bytes (each stream holds its largest message
    /// or write).
    pub buffer_bytes: u64,
    /// Most data paths of one session: no session can take the whole budget.
    pub session_data_paths: u32,
    /// Most buffer memory of one session, in bytes.
    pub session_buffer_bytes: u64,
}

impl Default for Budgets {
    fn default() -> Self {
        Self { data_paths: 1024, buffer_bytes: 512 << 20, session_data_paths: 256, session_buffer_bytes: 128 << 20 }
    }
}

/// The buffer memory a UDP stream holds whatever its datagram size (its coalesced receive buffer).
const UDP_STREAM_BUFFER_BYTES: u64 = 256 << 10;

/// Why a data connection, datagram or probe is not admitted.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotAdmitted {
    /// No running test of this transport holds the token.
    UnknownToken,
    /// The test already has every connection it asked for.
    AllConnections,
    /// It comes from another address than the test's control session.
    OtherAddress,
    /// A budget of the responder is spent.
    Budget(Refusal),
}

impl std::fmt::Display for NotAdmitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotAdmitted::UnknownToken => write!(f, "no running test holds this token"),
            NotAdmitted::AllConnections => write!(f, "the test already has all its connections"),
            NotAdmitted::OtherAddress => write!(f, "the token belongs to another address"),
            NotAdmitted::Budget(refusal) => write!(f, "{refusal}"),
        }
    }
}

/// The shared table of running tests.
#[derive(Default)]
pub(crate) struct Registry {
    tests: Mutex<Table>,
    spinning_udp_tests: AtomicU32,
    budgets: Budgets,
}

/// The tests, and what their streams hold of the budgets, in all and per session.
#[derive(Default)]
struct Table {
    tests: HashMap<u32, Slot>,
    data_paths: u32,
    buffer_bytes: u64,
    sessions: HashMap<u64, (u32, u64)>,
}

/// A registered test and the stream connections admitted for it.
struct Slot {
    entry: TestEntry,
    /// Duplicates of the admitted stream sockets, shut down when the test is released.
    sockets: Vec<Socket>,
    /// Buffer memory its streams hold.
    buffer_bytes: u64,
}

impl Registry {
    /// A registry with these budgets.
    pub fn new(budgets: Budgets) -> Self {
        Self { budgets, ..Self::default() }
    }

    /// Registers a test and returns its fresh, non-zero token (from the OS's random source, so that it
    /// cannot be guessed; it is bound to `entry.peer` besides).
    pub fn register(&self, entry: TestEntry) -> u32 {
        let mut table = self.lock();
        let token = loop {
            let token = u32::from_be_bytes(crate::random_bytes());
            if token != 0 && !table.tests.contains_key(&token) {
                break token;
            }
        };
        if entry.proto == Proto::Udp && entry.wait == WaitMode::Spin {
            self.spinning_udp_tests.fetch_add(1, Ordering::Relaxed);
        }
        table.tests.insert(token, Slot { entry, sockets: Vec::new(), buffer_bytes: 0 });
        token
    }

    /// Releases one token of `session` (a token of another session is left alone).
    pub fn release(&self, session: u64, token: u32) {
        let mut table = self.lock();
        if table.tests.get(&token).is_some_and(|slot| slot.entry.session == session) {
            let slot = table.tests.remove(&token);
            self.forget(&mut table, slot);
        }
    }

    /// Releases every token of a session.
    pub fn release_session(&self, session: u64) {
        let mut table = self.lock();
        let tokens: Vec<u32> =
            table.tests.iter().filter(|(_, s)| s.entry.session == session).map(|(t, _)| *t).collect();
        for token in tokens {
            let slot = table.tests.remove(&token);
            self.forget(&mut table, slot);
        }
    }

    /// Whether traffic from `from` may use `token`: the token is registered and was given to a control
    /// session at that IP address.
    pub fn admits_from(&self, token: u32, from: Option<IpAddr>) -> bool {
        self.lock().tests.get(&token).is_some_and(|s| s.entry.peer == from.map(canonical))
    }

    /// Admits one more stream connection from `from` for `token`, checking its address and the budgets.
    pub fn attach_from(
        &self,
        token: u32,
        proto: Proto,
        now: Instant,
        socket: Option<&Socket>,
        from: Option<IpAddr>,
    ) -> Result<TestEntry, NotAdmitted> {
        if !self.admits_from(token, from) {
            let known = self.lock().tests.contains_key(&token);
            return Err(if known { NotAdmitted::OtherAddress } else { NotAdmitted::UnknownToken });
        }
        self.attach_stream(token, proto, now, socket)
    }

    /// Admits one more stream connection for `token`, returning its test. An echo connection's `socket` is
    /// kept (duplicated) so that releasing the test can shut it down. The caller has checked the source
    /// address (`admits_from`).
    pub fn attach_stream(
        &self,
        token: u32,
        proto: Proto,
        now: Instant,
        socket: Option<&Socket>,
    ) -> Result<TestEntry, NotAdmitted> {
        let mut table = self.lock();
        let Table { tests, data_paths, buffer_bytes, sessions } = &mut *table;
        let slot = tests.get_mut(&token).ok_or(NotAdmitted::UnknownToken)?;
        let entry = &mut slot.entry;
        if entry.proto != proto || now > entry.deadline {
            return Err(NotAdmitted::UnknownToken);
        }
        if entry.kind != TestKind::ConnectProbe {
            if entry.streams >= entry.max_streams {
                return Err(NotAdmitted::AllConnections);
            }
            let bytes = if proto == Proto::Udp && entry.kind == TestKind::Throughput {
                UDP_STREAM_BUFFER_BYTES.max(entry.max_message_bytes)
            } else {
                entry.max_message_bytes
            };
            if *data_paths >= self.budgets.data_paths {
                let limit = u64::from(self.budgets.data_paths);
                return Err(NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::Threads, limit }));
            }
            if *buffer_bytes + bytes > self.budgets.buffer_bytes {
                let limit = self.budgets.buffer_bytes;
                return Err(NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::BufferMemory, limit }));
            }
            let session = sessions.entry(entry.session).or_default();
            if session.0 >= self.budgets.session_data_paths {
                let limit = u64::from(self.budgets.session_data_paths);
                return Err(NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::SessionThreads, limit }));
            }
            if session.1 + bytes > self.budgets.session_buffer_bytes {
                let limit = self.budgets.session_buffer_bytes;
                return Err(NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::SessionBufferMemory, limit }));
            }
            *session = (session.0 + 1, session.1 + bytes);
            *data_paths += 1;
            *buffer_bytes += bytes;
            slot.buffer_bytes += bytes;
            entry.streams += 1;
            if let Some(duplicate) = socket.and_then(|s| s.try_clone().ok()) {
                slot.sockets.push(duplicate);
            }
        }
        Ok(slot.entry.clone())
    }

    /// What all data paths hold now: (data paths, buffer bytes).
    #[cfg(test)]
    pub fn held(&self) -> (u32, u64) {
        let table = self.lock();
        (table.data_paths, table.buffer_bytes)
    }

    /// The state of a throughput test of `session`, with the number of streams admitted so far.
    pub fn bulk(&self, session: u64, token: u32) -> Option<(std::sync::Arc<super::bulk::BulkState>, u32)> {
        let table = self.lock();
        let slot = table.tests.get(&token).filter(|s| s.entry.session == session)?;
        Some((slot.entry.bulk.clone()?, slot.entry.streams))
    }

    /// The state of a running throughput test over `proto`, whatever its session.
    pub fn bulk_of(&self, token: u32, proto: Proto, now: Instant) -> Option<std::sync::Arc<super::bulk::BulkState>> {
        let table = self.lock();
        let slot = table.tests.get(&token).filter(|s| s.entry.proto == proto && now <= s.entry.deadline)?;
        slot.entry.bulk.clone()
    }

    /// Whether `token` still admits traffic of `proto`.
    pub fn is_live(&self, token: u32, proto: Proto, now: Instant) -> bool {
        self.lock().tests.get(&token).is_some_and(|s| s.entry.proto == proto && now <= s.entry.deadline)
    }

    /// Whether any running UDP test asked for a spinning responder.
    pub fn udp_should_spin(&self) -> bool {
        self.spinning_udp_tests.load(Ordering::Relaxed) > 0
    }

    fn forget(&self, table: &mut Table, slot: Option<Slot>) {
        let Some(slot) = slot else { return };
        // Connection probes hold no stream, so their count of streams is 0.
        table.data_paths -= slot.entry.streams.min(table.data_paths);
        table.buffer_bytes -= slot.buffer_bytes.min(table.buffer_bytes);
        if let Some(session) = table.sessions.get_mut(&slot.entry.session) {
            *session = (session.0.saturating_sub(slot.entry.streams), session.1.saturating_sub(slot.buffer_bytes));
            if *session == (0, 0) {
                table.sessions.remove(&slot.entry.session);
            }
        }
        if slot.entry.proto == Proto::Udp && slot.entry.wait == WaitMode::Spin {
            self.spinning_udp_tests.fetch_sub(1, Ordering::Relaxed);
        }
        for socket in slot.sockets {
            // Wakes the echo thread blocked on this connection, and tells the client the test is over.
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
        if let Some(bulk) = slot.entry.bulk {
            bulk.finished.store(true, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A poisoned lock means a thread panicked while holding it; the map is still consistent (every
        // mutation is a single insert or remove), so serving goes on.
        self.tests.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// An address as the sockets of both families name it: IPv4-mapped IPv6 addresses as IPv4.
pub(crate) fn canonical(address: IpAddr) -> IpAddr {
    address.to_canonical()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(session: u64, proto: Proto, max_streams: u32, deadline: Instant) -> TestEntry {
        TestEntry {
            session,
            proto,
            kind: TestKind::Echo,
            wait: WaitMode::Block,
            deadline,
            max_streams,
            streams: 0,
            max_message_bytes: 64,
            bulk: None,
            peer: Some(IpAddr::from([127, 0, 0, 1])),
        }
    }

    #[test]
    fn tokens_admit_only_their_proto_and_stream_count() {
        let registry = Registry::default();
        let now = Instant::now();
        let token = registry.register(entry(1, Proto::Tcp, 1, now + Duration::from_secs(9)));
        assert!(registry.attach_stream(token, Proto::Unix, now, None).is_err());
        assert!(registry.attach_stream(token, Proto::Tcp, now, None).is_ok());
        assert!(registry.attach_stream(token, Proto::Tcp, now, None).is_err(), "only one stream was requested");
        assert!(registry.attach_stream(token ^ 1, Proto::Tcp, now, None).is_err());
    }

    #[test]
    fn expired_and_released_tokens_are_not_live() {
        let registry = Registry::default();
        let now = Instant::now();
        let token = registry.register(entry(1, Proto::Udp, 1, now + Duration::from_secs(1)));
        assert!(registry.is_live(token, Proto::Udp, now));
        assert!(!registry.is_live(token, Proto::Udp, now + Duration::from_secs(2)));
        registry.release(2, token);
        assert!(registry.is_live(token, Proto::Udp, now), "another session cannot release it");
        registry.release_session(1);
        assert!(!registry.is_live(token, Proto::Udp, now));
    }

    #[test]
    fn a_token_admits_traffic_only_from_its_sessions_address() {
        let registry = Registry::default();
        let now = Instant::now();
        let token = registry.register(entry(1, Proto::Udp, 4, now + Duration::from_secs(9)));
        let owner = Some(IpAddr::from([127, 0, 0, 1]));
        assert!(registry.admits_from(token, owner));
        assert!(registry.admits_from(token, Some("::ffff:127.0.0.1".parse().unwrap())), "the same address, mapped");
        assert!(!registry.admits_from(token, Some(IpAddr::from([127, 0, 0, 2]))));
        let third = registry.attach_from(token, Proto::Udp, now, None, Some(IpAddr::from([198, 51, 100, 7])));
        assert_eq!(third.unwrap_err(), NotAdmitted::OtherAddress);
        assert!(registry.attach_from(token, Proto::Udp, now, None, owner).is_ok());
    }

    #[test]
    fn streams_beyond_a_budget_are_refused_and_released_ones_give_it_back() {
        let budgets = Budgets { data_paths: 2, buffer_bytes: 1000, session_data_paths: 2, session_buffer_bytes: 1000 };
        let registry = Registry::new(budgets);
        let now = Instant::now();
        let later = now + Duration::from_secs(9);
        let big = registry.register(TestEntry { max_message_bytes: 600, ..entry(1, Proto::Tcp, 4, later) });
        assert!(registry.attach_stream(big, Proto::Tcp, now, None).is_ok());
        let memory = registry.attach_stream(big, Proto::Tcp, now, None).unwrap_err();
        assert!(matches!(memory, NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::BufferMemory, .. })));
        let small = registry.register(entry(2, Proto::Tcp, 4, later));
        assert!(registry.attach_stream(small, Proto::Tcp, now, None).is_ok());
        let threads = registry.attach_stream(small, Proto::Tcp, now, None).unwrap_err();
        assert!(matches!(threads, NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::Threads, .. })));
        assert_eq!(registry.held(), (2, 664));
        registry.release_session(1);
        assert_eq!(registry.held(), (1, 64));
        assert!(registry.attach_stream(small, Proto::Tcp, now, None).is_ok());
    }

    #[test]
    fn one_session_cannot_take_the_whole_budget() {
        let budgets =
            Budgets { data_paths: 10, buffer_bytes: 10_000, session_data_paths: 3, session_buffer_bytes: 150 };
        let registry = Registry::new(budgets);
        let now = Instant::now();
        let later = now + Duration::from_secs(9);
        let greedy = registry.register(entry(1, Proto::Tcp, 10, later));
        assert!(registry.attach_stream(greedy, Proto::Tcp, now, None).is_ok());
        assert!(registry.attach_stream(greedy, Proto::Tcp, now, None).is_ok());
        let memory = registry.attach_stream(greedy, Proto::Tcp, now, None).unwrap_err();
        assert!(matches!(
            memory,
            NotAdmitted::Budget(Refusal::BudgetSpent { budget: Budget::SessionBufferMemory, .. })
        ));
        let other = registry.register(entry(2, Proto::Tcp, 10, later));
        assert!(registry.attach_stream(other, Proto::Tcp, now, None).is_ok(), "another session still gets its share");
        registry.release_session(1);
        assert_eq!(registry.held(), (1, 64));
    }
}
