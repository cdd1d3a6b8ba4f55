//! `MeasuredRun`: what a driver returns: the series it measured, and what stopped it early, if anything.

use linkperf_core::HostFacts;

use crate::NetError;

/// What a run measured, including when it stopped early. Drivers fail outright only when nothing could be
/// measured (no connection, a refusal); later failures come back here beside what was measured.
pub struct MeasuredRun<S> {
    /// The responder's facts, from its welcome.
    pub responder: HostFacts,
    /// This host's facts with the interface that carried the test (`None`: not known to the driver).
    pub client: Option<HostFacts>,
    /// Every series measured, in order.
    pub series: Vec<S>,
    /// What stopped the run early, if anything.
    pub error: Option<NetError>,
    /// Cautions about the figures, for people reading them.
    pub warnings: Vec<String>,
}

impl<S> MeasuredRun<S> {
    /// A run that has measured nothing yet, against a responder described by `responder`.
    pub fn new(responder: HostFacts) -> Self {
        Self { responder, client: None, series: Vec::new(), error: None, warnings: Vec::new() }
    }

    /// A run that has measured nothing yet, over `control`'s session: both endpoints' facts from it.
    pub fn of(control: &crate::ControlClient) -> Self {
        Self { client: Some(control.client().clone()), ..Self::new(control.responder().clone()) }
    }
}
