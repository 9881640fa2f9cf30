//! What the core asks of an engine ([`Io`]): the syscalls of one attempt. The engines
//! (`crate::engine`) implement it; the core's methods are generic over it (static dispatch).

use super::Core;

/// What the core asks of an engine (`crate::engine`): the syscalls of an attempt. Static
/// dispatch: the core's methods are generic over it.
pub(crate) trait Io {
    /// Starts slot `i`'s attempt to target `target` (its accounting done, its slot set):
    /// socket, options, connect. A failure to start is reported back ([`Core::fail`]).
    fn start(&mut self, core: &mut Core<'_>, i: usize, target: usize);
    /// Slot `i`'s handshake completed at `t` and its read phase began (deadline set): begin the
    /// exchange or the read (`readable`: the socket is known to have bytes).
    fn read_begin(&mut self, core: &mut Core<'_>, i: usize, t: u64, readable: bool);
    /// Closes slot `i`'s socket (RST or FIN per the close mode, set up at start); the core then
    /// frees the slot.
    fn close(&mut self, i: usize);
}
