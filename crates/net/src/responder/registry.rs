//! `Registry`: the tests a responder is serving, by token, shared by every session and data thread.
//!
//! A data connection or datagram is served only while its token is registered and its deadline has not
//! passed; releasing a token (test done, session closed) therefore stops its traffic within one tick of the
//! data threads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use linkperf_core::{Proto, WaitMode};

/// What kind of traffic a token admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TestKind {
    /// Echo every byte or datagram.
    Echo,
    /// Answer one byte per connection, then close.
    ConnectProbe,
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
}

/// The shared table of running tests.
#[derive(Default)]
pub(crate) struct Registry {
    tests: Mutex<HashMap<u32, TestEntry>>,
    spinning_udp_tests: AtomicU32,
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
        tests.insert(token, entry);
        token
    }

    /// Releases one token of `session` (a token of another session is left alone).
    pub fn release(&self, session: u64, token: u32) {
        let mut tests = self.lock();
        if tests.get(&token).is_some_and(|entry| entry.session == session) {
            let entry = tests.remove(&token);
            self.forget(entry.as_ref());
        }
    }

    /// Releases every token of a session.
    pub fn release_session(&self, session: u64) {
        let mut tests = self.lock();
        let tokens: Vec<u32> = tests.iter().filter(|(_, e)| e.session == session).map(|(t, _)| *t).collect();
        for token in tokens {
            let entry = tests.remove(&token);
            self.forget(entry.as_ref());
        }
    }

    /// Whether any test of `session` has passed its deadline.
    pub fn session_overran(&self, session: u64, now: Instant) -> bool {
        self.lock().values().any(|e| e.session == session && now > e.deadline)
    }

    /// Admits one more stream connection for `token`, returning its test.
    pub fn attach_stream(&self, token: u32, proto: Proto, now: Instant) -> Result<TestEntry, String> {
        let mut tests = self.lock();
        let entry = tests.get_mut(&token).ok_or_else(|| format!("unknown test token {token:08x}"))?;
        if entry.proto != proto || now > entry.deadline {
            return Err(format!("test token {token:08x} is not a running {} test", proto.name()));
        }
        if entry.kind == TestKind::Echo {
            if entry.streams >= entry.max_streams {
                return Err(format!("test token {token:08x} already has its {} connections", entry.max_streams));
            }
            entry.streams += 1;
        }
        Ok(entry.clone())
    }

    /// Whether `token` still admits traffic of `proto`.
    pub fn is_live(&self, token: u32, proto: Proto, now: Instant) -> bool {
        self.lock().get(&token).is_some_and(|e| e.proto == proto && now <= e.deadline)
    }

    /// Whether any running UDP test asked for a spinning responder.
    pub fn udp_should_spin(&self) -> bool {
        self.spinning_udp_tests.load(Ordering::Relaxed) > 0
    }

    fn forget(&self, entry: Option<&TestEntry>) {
        if entry.is_some_and(|e| e.proto == Proto::Udp && e.wait == WaitMode::Spin) {
            self.spinning_udp_tests.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, TestEntry>> {
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
        }
    }

    #[test]
    fn tokens_admit_only_their_proto_and_stream_count() {
        let registry = Registry::default();
        let now = Instant::now();
        let token = registry.register(entry(1, Proto::Tcp, 1, now + Duration::from_secs(9)));
        assert!(registry.attach_stream(token, Proto::Unix, now).is_err());
        assert!(registry.attach_stream(token, Proto::Tcp, now).is_ok());
        assert!(registry.attach_stream(token, Proto::Tcp, now).is_err(), "only one stream was requested");
        assert!(registry.attach_stream(token ^ 1, Proto::Tcp, now).is_err());
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
