//! A server's part in the PostgreSQL run queue (see [`crate::queue`]):
//! a worker that claims queued runs while it has room
//! ([`crate::Server::max_runs`]), woken by a `NOTIFY` with a poll as
//! backstop; a heartbeat that renews its runs' leases and puts back in
//! the queue the runs of servers whose lease expired; and, when the
//! server stops, a drain that lets its runs finish within the grace
//! period and hands the rest over to the other servers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{watch, Semaphore};

use crate::app::App;
use crate::queue;

/// How long a worker waits for a wake before it looks at the queue
/// anyway (a `NOTIFY` lost with a connection).
const BACKSTOP: Duration = Duration::from_secs(1);

/// How often a run of this server waiting for its thread asks again
/// without a wake.
const OWN_POLL: Duration = Duration::from_millis(250);

/// How long a server that stops waits for the runs it handed over to
/// let go.
const LET_GO: Duration = Duration::from_secs(5);

/// The queue's settings, as [`crate::Server`] was given them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FleetSettings {
    /// The most runs of the queue this server runs at once; `None`: the
    /// pool's size.
    pub max_runs: Option<usize>,
    /// How long a run's lease lasts; renewed every fifth of it.
    pub lease: Duration,
    /// How long a stopping server lets its runs finish before it hands
    /// them over.
    pub grace: Duration,
}

impl Default for FleetSettings {
    fn default() -> Self {
        FleetSettings {
            max_runs: None,
            lease: Duration::from_secs(10),
            grace: Duration::from_secs(30),
        }
    }
}

/// A server's worker: its settings, its room, and whether it stops.
pub(crate) struct Fleet {
    pub settings: FleetSettings,
    slots: Arc<Semaphore>,
    stop: watch::Sender<bool>,
}

impl Fleet {
    /// A worker with room for `max_runs` runs at once.
    pub(crate) fn new(settings: FleetSettings, max_runs: usize) -> Self {
        Fleet {
            settings,
            slots: Arc::new(Semaphore::new(max_runs.max(1))),
            stop: watch::Sender::new(false),
        }
    }
}

/// Takes over the runs of servers that died, then starts the worker and
/// the heartbeat, which end with the server (or when it stops, see
/// [`drain`]).
pub(crate) async fn start(app: &Arc<App>) {
    take_over(app).await;
    let Some(fleet) = &app.fleet else { return };
    let stop = fleet.stop.subscribe();
    tokio::spawn(claim_forever(Arc::downgrade(app), stop.clone()));
    tokio::spawn(heartbeat(Arc::downgrade(app), stop));
}

/// Claims queued runs while there is room, until the server stops.
async fn claim_forever(app: std::sync::Weak<App>, mut stop: watch::Receiver<bool>) {
    let Some(strong) = app.upgrade() else { return };
    let (Some(fleet), Some(session)) = (&strong.fleet, strong.leases.session()) else {
        return;
    };
    let (slots, mut wakes) = (Arc::clone(&fleet.slots), session.wakes());
    drop(strong);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            _ = stop.wait_for(|s| *s) => return,
        };
        let Ok(slot) = slot else { return };
        loop {
            let Some(app) = app.upgrade() else { return };
            if *stop.borrow() {
                return;
            }
            match claim_one(&app).await {
                Some(claimed) => {
                    crate::runner::run_claimed(&app, claimed, slot).await;
                    break;
                }
                None => drop(app),
            }
            tokio::select! {
                _ = wakes.changed() => {}
                () = tokio::time::sleep(BACKSTOP) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

async fn claim_one(app: &App) -> Option<queue::Claimed> {
    let (db, fleet) = (app.store.pg()?, app.fleet.as_ref()?);
    match queue::claim_next(db, app.store.owner(), fleet.settings.lease).await {
        Ok(claimed) => claimed,
        Err(e) => {
            tracing::error!(error = %e, "could not look at the run queue");
            None
        }
    }
}

/// Renews this server's leases and takes over expired ones, every fifth
/// of a lease, until the server is gone (its runs' leases are renewed
/// while it drains: it still runs them).
async fn heartbeat(app: std::sync::Weak<App>, stop: watch::Receiver<bool>) {
    let mut renewed = Instant::now();
    loop {
        let Some(app) = app.upgrade() else { return };
        let (Some(db), Some(fleet)) = (app.store.pg(), app.fleet.as_ref()) else {
            return;
        };
        let lease = fleet.settings.lease;
        // Only the runs registered before the renewal can be judged by
        // it: one stored and registered while it ran is not in its answer
        // (the statement saw the table as it was when it began).
        let held = app.running_ids();
        match queue::renew(db, app.store.owner(), lease).await {
            Ok(owned) => {
                renewed = Instant::now();
                let_go_lost(&app, |id| held.contains(id) && !owned.contains(id));
            }
            Err(e) => {
                tracing::error!(error = %e, "could not renew the leases of this server's runs");
                // Past its lease another server may have taken each run.
                if renewed.elapsed() >= lease {
                    let_go_lost(&app, |_| true);
                }
            }
        }
        if let Some(session) = app.leases.session() {
            // A listening connection that was cut is opened again.
            if let Err(e) = session.keep().await {
                tracing::error!(error = %e, "could not listen to the other servers");
            }
        }
        if !*stop.borrow() {
            take_over(&app).await;
        }
        drop(app);
        tokio::time::sleep(lease / 5).await;
    }
}

/// Stops, as handed over, this server's runs that `lost` says are no
/// longer its own (another server took them over after their lease
/// expired: this one was cut off, or paused), so a run is not run twice
/// for longer than a heartbeat. Their records are left to their owner.
fn let_go_lost(app: &App, lost: impl Fn(&str) -> bool) {
    let stopped = app.hand_over_where(lost);
    if stopped > 0 {
        tracing::warn!(
            runs = stopped,
            "runs this server no longer holds (their lease expired) stopped here"
        );
    }
}

async fn take_over(app: &App) {
    let Some(db) = app.store.pg() else { return };
    match queue::take_over(db).await {
        Ok(0) => {}
        Ok(runs) => {
            tracing::warn!(
                runs,
                "runs of a server whose lease expired put back in the queue"
            );
            if let Some(session) = app.leases.session() {
                let _ = session.send_wake().await;
            }
        }
        Err(e) => tracing::error!(error = %e, "could not look for runs of dead servers"),
    }
}

/// Waits until it is the turn of this server's pending run `run_id`:
/// `Ok(true)` once it runs here, `Ok(false)` when it is no longer this
/// server's to run.
pub(crate) async fn wait_own(app: &App, run_id: &str) -> Result<bool, crate::store::StoreError> {
    let (Some(db), Some(fleet), Some(session)) =
        (app.store.pg(), app.fleet.as_ref(), app.leases.session())
    else {
        return Ok(true);
    };
    let mut wakes = session.wakes();
    loop {
        match queue::claim_own(db, app.store.owner(), run_id, fleet.settings.lease).await? {
            queue::Own::Running => return Ok(true),
            queue::Own::Gone => return Ok(false),
            queue::Own::Wait => {}
        }
        tokio::select! {
            _ = wakes.changed() => {}
            () = tokio::time::sleep(OWN_POLL) => {}
        }
    }
}

/// A stopping server: claims no more, lets its runs finish within the
/// grace period, then hands the rest over (their lease released, to be
/// resumed by another server, no attempt counted) and waits for them to
/// let go.
pub(crate) async fn drain(app: &App) {
    let Some(fleet) = &app.fleet else { return };
    fleet.stop.send_replace(true);
    let deadline = Instant::now() + fleet.settings.grace;
    while app.running_count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let handed = app.hand_over_all();
    if handed > 0 {
        tracing::info!(
            runs = handed,
            "handing the runs still running over to the other servers"
        );
    }
    let deadline = Instant::now() + LET_GO;
    while app.running_count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
