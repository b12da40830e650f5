//! Stack measurement by painting.
//!
//! [`measure`] fills a window of the free stack below the current stack
//! pointer with a pattern, runs the operation, then scans the window from
//! its bottom for the first word that no longer holds the pattern: the
//! distance from the stack pointer to that word is the deepest stack the
//! operation used (its own frame and everything it called). A word the
//! operation wrote with exactly the pattern would be missed, which can only
//! under-count by the run of such words at the very bottom: negligible with
//! a 32-bit pattern that no pointer, count or small float equals.
//!
//! This is the one place of the firmware crates with `unsafe`: painting and
//! scanning write and read memory that belongs to no Rust object (the free
//! stack below the stack pointer), which only raw pointers can do.

/// The paint: a value no pointer into RAM or flash, no small integer and no
/// ordinary `f32` of these scenes equals.
pub const PAINT: u32 = 0xA5C3_5A3C;

/// What [`measure`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackUse {
    /// Bytes below the stack pointer at the call that the operation wrote.
    pub bytes: usize,
    /// The whole window was used: the true figure may be larger.
    pub overflowed_window: bool,
}

/// Runs `f` and measures the stack it uses, within a window of `window`
/// bytes below the current stack pointer (the window must fit above the end
/// of the statics; panics otherwise).
#[inline(never)]
pub fn measure<R>(window: usize, f: impl FnOnce() -> R) -> (R, StackUse) {
    let sp = cortex_m::register::msp::read() as usize & !3;
    let floor = cortex_m_rt::heap_start() as usize;
    let bottom = sp.saturating_sub(window) & !3;
    assert!(
        bottom > floor + 64,
        "stack window reaches the statics: sp {sp:#x}, window {window}, statics end {floor:#x}"
    );
    let words = (sp - bottom) / 4;
    let base = bottom as *mut u32;
    for i in 0..words {
        // SAFETY: `bottom..sp` is free stack: below the stack pointer (so no
        // live frame is there; this function's own frame is above `sp`) and
        // above the end of the statics (checked above). Nothing else runs
        // (no interrupts are enabled in these programs). Volatile, so the
        // compiler keeps the writes.
        #[allow(unsafe_code)]
        unsafe {
            core::ptr::write_volatile(base.add(i), PAINT);
        }
    }
    let r = call(f);
    let mut first_used = words;
    for i in 0..words {
        // SAFETY: as above; the operation has returned, so the window is
        // free stack again, and it was initialised by the painting.
        #[allow(unsafe_code)]
        let w = unsafe { core::ptr::read_volatile(base.add(i)) };
        if w != PAINT {
            first_used = i;
            break;
        }
    }
    let bytes = (words - first_used) * 4;
    (
        r,
        StackUse {
            bytes,
            overflowed_window: first_used == 0,
        },
    )
}

/// Calls `f` in a frame of its own, below the stack pointer read by
/// [`measure`]: inlined into `measure`, the operation's locals would sit in
/// `measure`'s frame and escape the count.
#[inline(never)]
fn call<R>(f: impl FnOnce() -> R) -> R {
    f()
}
