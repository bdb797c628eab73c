//! Which agent clients are connected now, by the name they gave in
//! `initialize`: the console's "What this agent sees" panels are one per
//! such name, and a tool's "deferred for" lists them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::events::EventBus;
use crate::slices::Slice;

/// Connections per client name.
#[derive(Debug, Default)]
pub struct Clients(Mutex<BTreeMap<String, usize>>);

impl Clients {
    /// The names of the clients connected now, sorted.
    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One connection of a named client, counted while it lives. The tools
/// slice changes when the first connection of a name opens or the last
/// closes, so open views add or drop its panel.
#[derive(Debug)]
pub struct ClientPresence {
    clients: Arc<Clients>,
    events: EventBus,
    name: String,
}

impl ClientPresence {
    /// Counts a connection of `name`.
    pub fn new(clients: Arc<Clients>, events: EventBus, name: &str) -> Self {
        let first = {
            let mut map = clients.lock();
            let n = map.entry(name.to_owned()).or_insert(0);
            *n += 1;
            *n == 1
        };
        if first {
            events.changed(Slice::Tools);
        }
        Self {
            clients,
            events,
            name: name.to_owned(),
        }
    }
}

impl Drop for ClientPresence {
    fn drop(&mut self) {
        let last = {
            let mut map = self.clients.lock();
            match map.get_mut(&self.name) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                Some(_) => {
                    map.remove(&self.name);
                    true
                }
                None => false,
            }
        };
        if last {
            self.events.changed(Slice::Tools);
        }
    }
}
