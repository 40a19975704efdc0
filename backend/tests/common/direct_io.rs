//! O_DIRECT helpers for tests that make real disk I/O the page cache cannot absorb.

use std::alloc::Layout;

/// O_DIRECT wants buffers aligned to the device's logical block size: 4096 covers 512-byte and
/// 4K-sector disks alike.
pub const ALIGN: usize = 4096;

/// A heap buffer aligned for O_DIRECT.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is uniquely owned; moving it to another thread moves the ownership.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len, ALIGN).expect("valid layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "allocation of {len} bytes failed");
        AlignedBuf { ptr, layout }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to `layout.size()` initialised (zeroed) bytes owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this very layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// `open(2)` flags value of O_DIRECT on this platform.
pub fn o_direct() -> i32 {
    rustix::fs::OFlags::DIRECT.bits() as i32
}
