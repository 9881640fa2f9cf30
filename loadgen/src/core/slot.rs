//! The preallocated attempt slots of one worker: a slab (no allocation per connection) with a
//! free list and an intrusive FIFO of the slots in flight, oldest deadline first.
//!
//! Every deadline is "now + connect timeout" when it is set, so appending at the tail keeps the
//! list sorted by deadline and the timeout check only looks at the head: O(1) per attempt.
//!
//! A slot holds what the accounting needs of an attempt; its socket is the engine's (kept by
//! slot index beside the slab, `crate::engine`).

const NIL: u32 = u32::MAX;

/// Where an attempt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Unused.
    Free,
    /// connect(2) issued, waiting for the handshake.
    Connecting,
    /// Handshake done, reading the greeting and/or waiting for the server's FIN.
    Reading,
}

/// One attempt in flight.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Intended start, ns (CLOCK_MONOTONIC).
    pub intended_ns: u64,
    /// socket(2) call time, ns.
    pub start_ns: u64,
    /// When the current phase times out, ns.
    pub deadline_ns: u64,
    /// Bytes read so far in [`Phase::Reading`].
    pub read: u32,
    /// The phase.
    pub phase: Phase,
    /// Intended start inside the measured window.
    pub measured: bool,
    /// Index of its target in `LoadConfig::targets`.
    pub target: u32,
    /// The attempt's outcome is counted (a success, a failure or abandoned: exactly once,
    /// `crate::core::Core::end`); the slot may still be open (a read phase after a success).
    pub decided: bool,
    prev: u32,
    next: u32,
}

/// The slots of one worker.
#[derive(Debug)]
pub(crate) struct Slab {
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    in_flight: usize,
}

impl Slab {
    /// `cap` free slots (`cap` < u32::MAX).
    pub(crate) fn new(cap: usize) -> Slab {
        let slots = (0..cap)
            .map(|_| Slot {
                intended_ns: 0,
                start_ns: 0,
                deadline_ns: 0,
                read: 0,
                phase: Phase::Free,
                measured: false,
                target: 0,
                decided: false,
                prev: NIL,
                next: NIL,
            })
            .collect();
        Slab {
            slots,
            free: (0..cap as u32).rev().collect(),
            head: NIL,
            tail: NIL,
            in_flight: 0,
        }
    }

    /// Slots in flight.
    #[inline]
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// True when every slot is in flight.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.free.is_empty()
    }

    /// Takes a free slot and appends it to the in-flight list; `None` when all are in flight.
    #[inline]
    pub(crate) fn alloc(&mut self) -> Option<usize> {
        let i = self.free.pop()?;
        self.push_tail(i);
        self.in_flight += 1;
        Some(i as usize)
    }

    /// Returns slot `i` to the free list (its socket must already be closed).
    #[inline]
    pub(crate) fn release(&mut self, i: usize) {
        debug_assert!(self.slots[i].phase != Phase::Free);
        self.unlink(i as u32);
        self.slots[i].phase = Phase::Free;
        self.free.push(i as u32);
        self.in_flight -= 1;
    }

    /// Moves slot `i` to the tail (after setting a later deadline).
    #[inline]
    pub(crate) fn requeue(&mut self, i: usize) {
        self.unlink(i as u32);
        self.push_tail(i as u32);
    }

    /// The in-flight slot with the earliest deadline.
    #[inline]
    pub(crate) fn oldest(&self) -> Option<usize> {
        (self.head != NIL).then_some(self.head as usize)
    }

    /// Slot `i`.
    #[inline]
    pub(crate) fn get(&mut self, i: usize) -> &mut Slot {
        &mut self.slots[i]
    }

    /// Slot `i`, to read.
    #[inline]
    pub(crate) fn at(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn push_tail(&mut self, i: u32) {
        let s = &mut self.slots[i as usize];
        s.prev = self.tail;
        s.next = NIL;
        if self.tail == NIL {
            self.head = i;
        } else {
            self.slots[self.tail as usize].next = i;
        }
        self.tail = i;
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = {
            let s = &self.slots[i as usize];
            (s.prev, s.next)
        };
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_order_survives_release_and_requeue() {
        let mut s = Slab::new(3);
        let a = s.alloc().unwrap();
        let b = s.alloc().unwrap();
        let c = s.alloc().unwrap();
        for i in [a, b, c] {
            s.get(i).phase = Phase::Connecting;
        }
        assert!(s.is_full() && s.alloc().is_none());
        assert_eq!(s.oldest(), Some(a));
        s.requeue(a);
        assert_eq!(s.oldest(), Some(b));
        s.release(b);
        assert_eq!(s.oldest(), Some(c));
        s.release(c);
        assert_eq!(s.oldest(), Some(a));
        s.release(a);
        assert_eq!((s.oldest(), s.in_flight()), (None, 0));
        let d = s.alloc().unwrap();
        assert_eq!(s.oldest(), Some(d));
        assert_eq!(s.capacity(), 3);
    }
}
