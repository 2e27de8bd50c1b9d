//! A stop request (Ctrl-C, SIGTERM) passed down to whatever is running, so a run can end in
//! order: the running check's query cancelled and its transaction rolled back, what finished
//! reported, the throwaway server removed.

use tokio::sync::watch;

/// The receiving side: cheap to clone, one per place that waits.
#[derive(Clone, Debug)]
pub struct Stop(watch::Receiver<Option<i32>>);

/// The sending side, held by `main`.
#[derive(Debug)]
pub struct StopSender(watch::Sender<Option<i32>>);

impl Stop {
    /// A new pair. The value sent is the exit status the stop stands for (130, 143).
    pub fn new() -> (StopSender, Stop) {
        let (tx, rx) = watch::channel(None);
        (StopSender(tx), Stop(rx))
    }

    /// A stop that never comes, for callers with nothing to interrupt them (tests).
    pub fn never() -> Stop {
        let (tx, rx) = watch::channel(None);
        // The sender is leaked on purpose: dropping it would end `wait` with no value.
        std::mem::forget(tx);
        Stop(rx)
    }

    /// The exit status of a stop already requested.
    pub fn requested(&self) -> Option<i32> {
        *self.0.borrow()
    }

    /// Waits for a stop; returns its exit status.
    pub async fn wait(&mut self) -> i32 {
        loop {
            if let Some(code) = *self.0.borrow_and_update() {
                return code;
            }
            if self.0.changed().await.is_err() {
                // No sender any more: no stop can come.
                std::future::pending::<()>().await;
            }
        }
    }
}

impl StopSender {
    pub fn send(&self, code: i32) {
        let _ = self.0.send(Some(code));
    }
}

/// The run was stopped by a signal; the value is the exit status (130 for Ctrl-C, 143 for TERM).
#[derive(Debug)]
pub struct Interrupted(pub i32);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Interrupted {}

/// Runs `work` unless a stop comes first; then returns [`Interrupted`].
pub async fn unless_stopped<T>(
    stop: &mut Stop,
    work: impl std::future::Future<Output = crate::error::Result<T>>,
) -> crate::error::Result<T> {
    tokio::select! {
        r = work => r,
        code = stop.wait() => Err(Interrupted(code).into()),
    }
}
