//! Stack use of the main public operations, measured on the target by
//! painting (see `spatium_fw_common::stack`), against the documented bounds
//! of `spatium_fw_common::workloads` (the same table the `stack-report`
//! binary prints for the release build).

#![no_std]
#![no_main]

use cortex_m_rt as _;
use spatium_fw_tests as _;

#[embedded_test::setup]
fn setup() {
    spatium_fw_tests::init_log();
}

#[embedded_test::tests]
mod tests {
    use spatium_fw_tests::common::workloads;
    use spatium_fw_tests::stack::{PAINT, measure};

    /// The method itself: a function with a 1 KiB local array is measured
    /// at 1 KiB plus a small frame, and nothing is measured for nothing.
    #[test]
    fn painting_measures_a_known_frame() {
        #[inline(never)]
        fn uses_1k() -> u32 {
            let mut a = [0u32; 256];
            for (i, x) in a.iter_mut().enumerate() {
                *x = core::hint::black_box(i as u32) ^ PAINT;
            }
            core::hint::black_box(&a).iter().fold(0, |s, x| s ^ x)
        }
        let (_, used) = measure(8 * 1024, uses_1k);
        assert!(!used.overflowed_window);
        assert!(
            used.bytes >= 1024 && used.bytes <= 1024 + 128,
            "measured {} bytes for a 1 KiB frame",
            used.bytes
        );
        let (_, none) = measure(1024, || core::hint::black_box(1));
        assert!(
            none.bytes <= 64,
            "measured {} bytes for nothing",
            none.bytes
        );
    }

    #[test]
    fn main_operations_stay_within_documented_bounds() {
        let mut failed = 0;
        workloads::run(|f| {
            log::info!(
                "{:<48} {:>6} B (bound {:>5} B){}",
                f.name,
                f.used.bytes,
                f.bound,
                if f.ok() { "" } else { "  <-- OVER" }
            );
            if !f.ok() {
                failed += 1;
            }
        });
        assert_eq!(failed, 0, "operations over their stack bound (see the log)");
    }
}
