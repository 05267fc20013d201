//! Turns of a bounded number of slots, shared among owners in rotation
//! (the malware scans', and the import fetches'): at most `at_once` hold
//! one in this process;
//! when one ends, the next turn goes to the owner after the one served
//! last, so one user's many (or slow) files never hold another user's
//! behind them.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::oneshot;

/// The turns of one process.
#[derive(Debug)]
pub struct Turns {
    at_once: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Turns held.
    running: usize,
    /// The owners with files waiting, in the order their turn comes, each
    /// with its files' waits in the order they came.
    queue: VecDeque<(String, VecDeque<oneshot::Sender<()>>)>,
}

/// A turn held by one of `owner`'s files, handed to the next owner in
/// rotation when dropped.
#[derive(Debug)]
pub struct Turn<'a> {
    turns: &'a Turns,
    owner: String,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.hand_over(Some(&self.owner));
    }
}

/// A wait for a turn; a turn handed to a wait that is given up is handed on.
struct Waiting<'a> {
    turns: &'a Turns,
    rx: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.turns.hand_over(None);
            }
        }
    }
}

impl Turns {
    /// `at_once` turns (at least one).
    pub fn new(at_once: usize) -> Self {
        Self {
            at_once: at_once.max(1),
            state: Mutex::default(),
        }
    }

    /// A turn for one of `owner`'s files: at once if one is free and no
    /// one waits, else when the rotation comes to `owner`.
    pub async fn take(&self, owner: &str) -> Turn<'_> {
        let rx = {
            let mut state = self.lock();
            if state.running < self.at_once && state.queue.is_empty() {
                state.running += 1;
                return self.turn(owner);
            }
            let (tx, rx) = oneshot::channel();
            match state.queue.iter_mut().find(|(o, _)| o == owner) {
                Some((_, waits)) => waits.push_back(tx),
                None => state
                    .queue
                    .push_back((owner.to_owned(), VecDeque::from([tx]))),
            }
            rx
        };
        let mut waiting = Waiting {
            turns: self,
            rx: Some(rx),
        };
        let handed = waiting.rx.as_mut().expect("just set").await;
        // Handed over (still counted in `running`), or, if the sender went
        // (never, but harmless), taken afresh.
        waiting.rx = None;
        if handed.is_err() {
            self.lock().running += 1;
        }
        self.turn(owner)
    }

    fn turn(&self, owner: &str) -> Turn<'_> {
        Turn {
            turns: self,
            owner: owner.to_owned(),
        }
    }

    /// A turn of `ended`'s ends: it goes to the first owner waiting other
    /// than `ended` if there is one (who goes to the back of the rotation
    /// if they have more files waiting); none waiting, it is free.
    fn hand_over(&self, ended: Option<&str>) {
        let mut state = self.lock();
        if state.queue.len() > 1 && state.queue.front().map(|(o, _)| o.as_str()) == ended {
            state.queue.rotate_left(1);
        }
        while let Some((owner, mut waits)) = state.queue.pop_front() {
            let next = waits.pop_front();
            if !waits.is_empty() {
                state.queue.push_back((owner, waits));
            }
            if next.is_some_and(|tx| tx.send(()).is_ok()) {
                return;
            }
        }
        state.running = state.running.saturating_sub(1);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// With every turn taken, an owner who comes after another's five
    /// files waiting is served next, not sixth.
    #[tokio::test]
    async fn turns_go_round_the_owners() {
        let turns = Arc::new(Turns::new(1));
        let first = turns.take("alice").await;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for (i, owner) in ["alice", "alice", "alice", "alice", "alice", "bob"]
            .into_iter()
            .enumerate()
        {
            let (turns, tx) = (turns.clone(), tx.clone());
            tasks.push(tokio::spawn(async move {
                let _turn = turns.take(owner).await;
                tx.send((i, owner)).unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }));
            // Queued in this order.
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        drop(first);
        let mut served = Vec::new();
        for _ in 0..6 {
            served.push(rx.recv().await.unwrap().1);
        }
        assert_eq!(
            served[0], "bob",
            "the turn alice held goes to bob: {served:?}"
        );
        assert_eq!(served[1..], ["alice"; 5], "{served:?}");
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(turns.lock().running, 0, "every turn given back");
    }

    /// A wait given up does not keep the turn it was handed.
    #[tokio::test]
    async fn a_wait_given_up_passes_its_turn_on() {
        let turns = Turns::new(1);
        let held = turns.take("alice").await;
        let gave_up =
            tokio::time::timeout(std::time::Duration::from_millis(10), turns.take("bob")).await;
        assert!(gave_up.is_err(), "no turn was free");
        drop(held);
        let again =
            tokio::time::timeout(std::time::Duration::from_secs(1), turns.take("carol")).await;
        assert!(again.is_ok(), "the turn is free again");
    }
}
