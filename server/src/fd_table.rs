//! Per-connection state of a worker, indexed by file descriptor and grown on demand.
//!
//! The kernel gives a new descriptor the lowest free number (open(2), "the lowest-numbered file
//! descriptor not currently open"), so the numbers a worker sees stay below the process's open
//! descriptors at the time: a table grown by doubling to cover the highest fd seen is at most
//! about twice the connections open at once (plus the process's other descriptors), not
//! RLIMIT_NOFILE (up to 2^20) up front. Growth allocates only when a new highest fd appears, so
//! in steady state there is no allocation per connection.

/// State of type `T` per descriptor, `T::default()` where there is none.
#[derive(Debug)]
pub(crate) struct FdTable<T> {
    slots: Vec<T>,
}

impl<T: Default> FdTable<T> {
    /// An empty table (no allocation until the first [`FdTable::slot`]).
    pub(crate) fn new() -> Self {
        FdTable { slots: Vec::new() }
    }

    /// The state of `fd`, growing the table to the next power of two above `fd` when it is
    /// past the end.
    pub(crate) fn slot(&mut self, fd: usize) -> &mut T {
        if fd >= self.slots.len() {
            self.slots
                .resize_with((fd + 1).next_power_of_two(), T::default);
        }
        &mut self.slots[fd]
    }

    /// The state of `fd`, or `None` past the end (never grows).
    pub(crate) fn get_mut(&mut self, fd: usize) -> Option<&mut T> {
        self.slots.get_mut(fd)
    }

    /// Entries, one per descriptor number from 0: what the table costs is this times the size of
    /// `T`.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Every entry, by descriptor number.
    pub(crate) fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.slots.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_grows_by_doubling_to_cover_the_highest_fd() {
        let mut t: FdTable<Option<u32>> = FdTable::new();
        assert_eq!(t.len(), 0);
        assert_eq!(t.get_mut(0), None);
        *t.slot(5) = Some(5);
        assert_eq!(t.len(), 8);
        *t.slot(7) = Some(7);
        assert_eq!(t.len(), 8, "no growth inside the table");
        *t.slot(8) = Some(8);
        assert_eq!(t.len(), 16);
        assert_eq!(t.get_mut(5), Some(&mut Some(5)));
        assert_eq!(t.get_mut(16), None);
        assert_eq!(t.iter_mut().filter(|s| s.is_some()).count(), 3);
    }
}
