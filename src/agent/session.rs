//! The fixed-capacity table of sessions held in RAM, least recently used first out.
//!
//! A session's history lives in SQLite; the table only holds per-session runtime state
//! (the approvals' `/always` flags). An evicted session is rebuilt from SQLite the next
//! time it speaks.
//!
//! # Bounds
//! At most `capacity` entries (`agent.max_sessions`). Only entries the caller says are
//! evictable (idle) are evicted; when none is, `get_or_insert` returns `None` and the
//! caller answers "busy".
//!
//! # Threads
//! Any thread: pure functions over their arguments, no I/O.

/// One slot of the table.
struct Slot<T> {
    id: String,
    last_used: u64,
    state: T,
}

pub struct SessionTable<T> {
    capacity: usize,
    tick: u64,
    slots: Vec<Slot<T>>,
}

impl<T> SessionTable<T> {
    pub fn new(capacity: usize) -> SessionTable<T> {
        SessionTable {
            capacity: capacity.max(1),
            tick: 0,
            slots: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The state of `id` if it is in RAM (marks it used).
    pub fn get_mut(&mut self, id: &str) -> Option<&mut T> {
        self.tick += 1;
        let tick = self.tick;
        self.slots.iter_mut().find(|s| s.id == id).map(|s| {
            s.last_used = tick;
            &mut s.state
        })
    }

    /// The state of `id`, creating it with `make` (evicting the least recently used
    /// evictable entry if the table is full). `None` when full of unevictable entries.
    pub fn get_or_insert(
        &mut self,
        id: &str,
        make: impl FnOnce() -> T,
        evictable: impl Fn(&T) -> bool,
    ) -> Option<&mut T> {
        self.tick += 1;
        let tick = self.tick;
        if let Some(i) = self.slots.iter().position(|s| s.id == id) {
            let s = &mut self.slots[i];
            s.last_used = tick;
            return Some(&mut s.state);
        }
        if self.slots.len() >= self.capacity {
            let victim = self
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| evictable(&s.state))
                .min_by_key(|(_, s)| s.last_used)
                .map(|(i, _)| i)?;
            self.slots.swap_remove(victim);
        }
        self.slots.push(Slot {
            id: id.to_string(),
            last_used: tick,
            state: make(),
        });
        self.slots.last_mut().map(|s| &mut s.state)
    }

    pub fn remove(&mut self, id: &str) -> Option<T> {
        let i = self.slots.iter().position(|s| s.id == id)?;
        Some(self.slots.swap_remove(i).state)
    }

    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.slots.iter().map(|s| s.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_recently_used_idle_entry_is_evicted() {
        let mut t: SessionTable<bool> = SessionTable::new(2); // state: busy?
        t.get_or_insert("a", || false, |b| !*b);
        t.get_or_insert("b", || false, |b| !*b);
        t.get_mut("a"); // a is now more recent than b
        t.get_or_insert("c", || false, |b| !*b);
        let ids: Vec<_> = t.ids().collect();
        assert!(ids.contains(&"a") && ids.contains(&"c") && !ids.contains(&"b"));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn busy_entries_are_never_evicted() {
        let mut t: SessionTable<bool> = SessionTable::new(2);
        t.get_or_insert("a", || true, |b| !*b);
        t.get_or_insert("b", || true, |b| !*b);
        assert!(t.get_or_insert("c", || true, |b| !*b).is_none());
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn the_table_never_grows_past_capacity() {
        let mut t: SessionTable<u32> = SessionTable::new(16);
        for i in 0..10_000 {
            t.get_or_insert(&format!("s{i}"), || 0, |_| true);
            assert!(t.len() <= 16);
        }
    }
}
