//! toolgate's global allocator: mimalloc, entered by the alignment each
//! allocation needs.
//!
//! The `mimalloc` crate's allocator passes every allocation to
//! `mi_malloc_aligned`. Its fast path serves only blocks of up to 1 KiB
//! whose free list happens to be aligned; anything larger (a boxed request
//! future, hyper's read buffer) takes the aligned slow path, and a size
//! that is not a power of two is then over-allocated by its alignment and
//! its page marked as holding interior pointers, which slows every free on
//! it. Every mimalloc block is aligned to a machine word, so an allocation
//! that needs no more than that goes to `mi_malloc` as it is, as Rust's own
//! system allocator does with `malloc`; only the rest take the aligned entry
//! points.

#![no_std]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use libmimalloc_sys as ffi;

/// The alignment every mimalloc block has, whatever its size.
const WORD: usize = core::mem::size_of::<usize>();

/// Whether mimalloc's plain entry points serve `layout`: every block they
/// return is word-aligned.
#[inline]
const fn plain(layout: &Layout) -> bool {
    layout.align() <= WORD
}

/// mimalloc, entered by alignment (see the crate's documentation).
pub struct Allocator;

// SAFETY: every path returns mimalloc's memory of at least `layout.size()`
// bytes aligned to `layout.align()` (a word-aligned request gets a
// mimalloc block, which is always word-aligned; any other gets the aligned
// entry points), or null; `mi_free` and `mi_realloc` take any of them.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's entry points accept any size and a power-of-two alignment.
        unsafe {
            if plain(&layout) {
                ffi::mi_malloc(layout.size()) as *mut u8
            } else {
                ffi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(&layout) {
                ffi::mi_zalloc(layout.size()) as *mut u8
            } else {
                ffi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { ffi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`'s alignment,
        // which the new block keeps.
        unsafe {
            if plain(&layout) {
                ffi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                ffi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests;
