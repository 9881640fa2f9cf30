//! A `PERF_SAMPLE_CALLCHAIN` array split into its kernel and user parts.
//!
//! The kernel writes the callchain leaf first, each part preceded by a context marker
//! (`include/uapi/linux/perf_event.h` `enum perf_callchain_context`): `PERF_CONTEXT_KERNEL`
//! (-128) then the interrupted kernel IP and the return addresses of its callers, then
//! `PERF_CONTEXT_USER` (-512) and the user IP and return addresses. Values at or above
//! `PERF_CONTEXT_MAX` (-4095, as u64) are markers; hypervisor and guest parts are dropped.

const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

/// Splits a raw callchain into (kernel addresses, user addresses), each leaf first.
///
/// The first address of each part is where the CPU was (an instruction); the rest are return
/// addresses, which symbolize best as `addr - 1` (the call instruction).
/// A chain without markers is taken as all kernel when `kernel_mode`, else all user.
pub fn split_callchain(chain: &[u64], kernel_mode: bool) -> (Vec<u64>, Vec<u64>) {
    let mut kernel = Vec::new();
    let mut user = Vec::new();
    // None: a hypervisor or guest part, dropped.
    let mut part: Option<bool> = Some(kernel_mode);
    for &a in chain {
        if a >= PERF_CONTEXT_MAX {
            part = match a {
                PERF_CONTEXT_KERNEL => Some(true),
                PERF_CONTEXT_USER => Some(false),
                _ => None,
            };
            continue;
        }
        match part {
            Some(true) => kernel.push(a),
            Some(false) => user.push(a),
            None => {}
        }
    }
    (kernel, user)
}

/// The address to symbolize for the `index`-th frame of a part: the frame itself for the leaf,
/// the byte before a return address for callers (a call at the very end of a function returns
/// past its last byte).
pub(crate) fn symbol_address(index: usize, addr: u64) -> u64 {
    if index == 0 {
        addr
    } else {
        addr.saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_split_kernel_and_user_parts() {
        let chain = [
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
            PERF_CONTEXT_USER,
            0x5555_0000_1000,
            0x5555_0000_2000,
        ];
        let (k, u) = split_callchain(&chain, true);
        assert_eq!(k, [0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
        assert_eq!(u, [0x5555_0000_1000, 0x5555_0000_2000]);
    }

    #[test]
    fn guest_parts_are_dropped_and_unmarked_chains_follow_the_mode() {
        let guest = -2048i64 as u64;
        let (k, u) = split_callchain(&[guest, 1, 2, PERF_CONTEXT_USER, 3], false);
        assert!(k.is_empty());
        assert_eq!(u, [3]);
        assert_eq!(split_callchain(&[7, 8], false), (vec![], vec![7, 8]));
        assert_eq!(split_callchain(&[7], true), (vec![7], vec![]));
        assert_eq!(symbol_address(0, 10), 10);
        assert_eq!(symbol_address(1, 10), 9);
    }
}
