//! A one-value channel whose receiving end is a future: how a wgpu callback
//! (`map_async`, `on_submitted_work_done`) becomes something to `.await`
//! on every target. Natively the callback runs inside `Device::poll`; in a
//! browser, when the JavaScript promise behind it settles.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// What sender and receiver share: the value once sent, the waker of a
/// pending receiver.
struct Shared<T> {
    value: Option<T>,
    waker: Option<Waker>,
}

/// The sending end (moved into the callback).
pub(crate) struct Sender<T>(Arc<Mutex<Shared<T>>>);

/// The receiving end: resolves to the value sent.
pub(crate) struct Receiver<T>(Arc<Mutex<Shared<T>>>);

/// A sender and its receiver.
pub(crate) fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Mutex::new(Shared {
        value: None,
        waker: None,
    }));
    (Sender(shared.clone()), Receiver(shared))
}

impl<T> Sender<T> {
    /// Stores the value and wakes the receiver.
    pub(crate) fn send(self, value: T) {
        let waker = {
            let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            s.value = Some(value);
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Future for Receiver<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut s = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match s.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::channel;

    #[test]
    fn a_value_sent_before_or_after_the_first_poll_arrives() {
        let (tx, rx) = channel();
        tx.send(7u32);
        assert_eq!(pollster::block_on(rx), 7);

        let (tx, rx) = channel();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tx.send("late");
        });
        assert_eq!(pollster::block_on(rx), "late");
        t.join().expect("sender thread");
    }
}
