//! `Registry`: the tests a responder is serving, by token, shared by every session and data thread.
//!
//! A data connection or datagram is served only while its token is registered and its deadline has not
//! passed. Releasing a token (test done, session closed or over its time) shuts its stream connections
//! down at once, so a busy echo thread needs no clock on its data path to notice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use linkperf_core::{Proto, WaitMode};
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
}

/// The shared table of running tests.
#[derive(Default)]
pub(crate) struct Registry {
    tests: Mutex<HashMap<u32, Slot>>,
    spinning_udp_tests: AtomicU32,
}

/// A registered test and the stream connections admitted for it.
struct Slot {
    entry: TestEntry,
    /// Duplicates of the admitted stream sockets, shut down when the test is released.
    sockets: Vec<Socket>,
}

impl Registry {
    /// Registers a test and returns its fresh, non-zero token.
    pub fn register(&self, entry: TestEntry) -> u32 {
        let mut tests = self.lock();
        let token = loop {
            let token = u32::from_be_bytes(crate::random_bytes());
            if token != 0 && !tests.contains_key(&token) {
                break token;
            }
        };
        if entry.proto == Proto::Udp && entry.wait == WaitMode::Spin {
            self.spinning_udp_tests.fetch_add(1, Ordering::Relaxed);
        }
        tests.insert(token, Slot { entry, sockets: Vec::new() });
        token
    }

    /// Releases one token of `session` (a token of another session is left alone).
    pub fn release(&self, session: u64, token: u32) {
        let mut tests = self.lock();
        if tests.get(&token).is_some_and(|slot| slot.entry.session == session) {
            let slot = tests.remove(&token);
            self.forget(slot);
        }
    }

    /// Releases every token of a session.
    pub fn release_session(&self, session: u64) {
        let mut tests = self.lock();
        let tokens: Vec<u32> = tests.iter().filter(|(_, s)| s.entry.session == session).map(|(t, _)| *t).collect();
        for token in tokens {
            let slot = tests.remove(&token);
            self.forget(slot);
        }
    }

    /// Whether any test of `session` has passed its deadline.
    pub fn session_overran(&self, session: u64, now: Instant) -> bool {
        self.lock().values().any(|s| s.entry.session == session && now > s.entry.deadline)
    }

    /// Admits one more stream connection for `token`, returning its test. An echo connection's `socket` is
    /// kept (duplicated) so that releasing the test can shut it down.
    pub fn attach_stream(
        &self,
        token: u32,
        proto: Proto,
        now: Instant,
        socket: Option<&Socket>,
    ) -> Result<TestEntry, String> {
        let mut tests = self.lock();
        let slot = tests.get_mut(&token).ok_or_else(|| format!("unknown test token {token:08x}"))?;
        let entry = &mut slot.entry;
        if entry.proto != proto || now > entry.deadline {
            return Err(format!("test token {token:08x} is not a running {} test", proto.name()));
        }
        if entry.kind != TestKind::ConnectProbe {
            if entry.streams >= entry.max_streams {
                return Err(format!("test token {token:08x} already has its {} connections", entry.max_streams));
            }
            entry.streams += 1;
            if let Some(duplicate) = socket.and_then(|s| s.try_clone().ok()) {
                slot.sockets.push(duplicate);
            }
        }
        Ok(slot.entry.clone())
    }

    /// The state of a throughput test of `session`, with the number of streams admitted so far.
    pub fn bulk(&self, session: u64, token: u32) -> Option<(std::sync::Arc<super::bulk::BulkState>, u32)> {
        let tests = self.lock();
        let slot = tests.get(&token).filter(|s| s.entry.session == session)?;
        Some((slot.entry.bulk.clone()?, slot.entry.streams))
    }

    /// The state of a running throughput test over `proto`, whatever its session.
    pub fn bulk_of(&self, token: u32, proto: Proto, now: Instant) -> Option<std::sync::Arc<super::bulk::BulkState>> {
        let tests = self.lock();
        let slot = tests.get(&token).filter(|s| s.entry.proto == proto && now <= s.entry.deadline)?;
        slot.entry.bulk.clone()
    }

    /// Whether `token` still admits traffic of `proto`.
    pub fn is_live(&self, token: u32, proto: Proto, now: Instant) -> bool {
        self.lock().get(&token).is_some_and(|s| s.entry.proto == proto && now <= s.entry.deadline)
    }

    /// Whether any running UDP test asked for a spinning responder.
    pub fn udp_should_spin(&self) -> bool {
        self.spinning_udp_tests.load(Ordering::Relaxed) > 0
    }

    fn forget(&self, slot: Option<Slot>) {
        let Some(slot) = slot else { return };
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Slot>> {
        // A poisoned lock means a thread panicked while holding it; the map is still consistent (every
        // mutation is a single insert or remove), so serving goes on.
        self.tests.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
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
        assert!(registry.session_overran(1, now + Duration::from_secs(2)));
        registry.release(2, token);
        assert!(registry.is_live(token, Proto::Udp, now), "another session cannot release it");
        registry.release_session(1);
        assert!(!registry.is_live(token, Proto::Udp, now));
    }
}
