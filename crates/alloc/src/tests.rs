extern crate std;

use core::alloc::{GlobalAlloc, Layout};
use std::vec::Vec;

use super::Allocator;

/// Sizes around mimalloc's size classes and its small-block limit (1 KiB),
/// and large ones.
const SIZES: [usize; 14] = [1, 3, 7, 8, 9, 15, 16, 24, 100, 1000, 1024, 1500, 5000, 300_000];

fn layouts() -> impl Iterator<Item = Layout> {
    SIZES.into_iter().flat_map(|size| {
        [1, 2, 4, 8, 16, 32, 64, 128, 4096].into_iter().map(move |align| Layout::from_size_align(size, align).unwrap())
    })
}

#[test]
fn every_block_has_its_size_and_alignment_and_keeps_its_bytes() {
    let a = Allocator;
    for layout in layouts() {
        // Several at once, so blocks come from used pages, not a fresh one.
        let blocks: Vec<*mut u8> = (0..8)
            .map(|i| {
                // SAFETY: `layout` has a non-zero size.
                let p = unsafe { a.alloc(layout) };
                assert!(!p.is_null(), "{layout:?}");
                assert_eq!(p as usize % layout.align(), 0, "{layout:?} misaligned");
                // SAFETY: the block has `layout.size()` bytes.
                unsafe { p.write_bytes(i as u8, layout.size()) };
                p
            })
            .collect();
        for (i, p) in blocks.into_iter().enumerate() {
            // SAFETY: written above with `layout.size()` bytes of `i`.
            let bytes = unsafe { core::slice::from_raw_parts(p, layout.size()) };
            assert!(bytes.iter().all(|&b| b == i as u8), "{layout:?}: a block overlaps another");
            // SAFETY: allocated above with `layout`.
            unsafe { a.dealloc(p, layout) };
        }
    }
}

#[test]
fn a_zeroed_block_is_zero_even_where_a_freed_one_was_written() {
    let a = Allocator;
    for layout in layouts() {
        // SAFETY: non-zero sizes; each block is freed with its layout.
        unsafe {
            let dirty = a.alloc(layout);
            dirty.write_bytes(0xAB, layout.size());
            a.dealloc(dirty, layout);
            let p = a.alloc_zeroed(layout);
            assert_eq!(p as usize % layout.align(), 0, "{layout:?} misaligned");
            assert!(core::slice::from_raw_parts(p, layout.size()).iter().all(|&b| b == 0), "{layout:?}");
            a.dealloc(p, layout);
        }
    }
}

#[test]
fn a_block_grown_or_shrunk_keeps_its_alignment_and_its_bytes() {
    let a = Allocator;
    for layout in layouts() {
        for new_size in SIZES {
            // SAFETY: non-zero sizes; the block is freed with the layout of its last size.
            unsafe {
                let p = a.alloc(layout);
                for i in 0..layout.size() {
                    *p.add(i) = i as u8;
                }
                let q = a.realloc(p, layout, new_size);
                assert!(!q.is_null());
                assert_eq!(q as usize % layout.align(), 0, "{layout:?} to {new_size} misaligned");
                let kept = layout.size().min(new_size);
                assert!((0..kept).all(|i| *q.add(i) == i as u8), "{layout:?} to {new_size} lost bytes");
                a.dealloc(q, Layout::from_size_align(new_size, layout.align()).unwrap());
            }
        }
    }
}
