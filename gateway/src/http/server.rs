//! Serving: [`serve`] runs the app on a listener until a shutdown future resolves, then drains
//! and shuts the broker down. [`RunningServer`] starts one in the background (for tests).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use broker_core::{Broker, BrokerError};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::{AppState, app};
use crate::cluster::{ClusterPort, LeadBackTask};
use crate::config::Settings;
use crate::governance::alerts::Alerts;
use crate::governance::history::History;
use crate::governance::history::sampler::Sampler;
use crate::governance::probe::{ProbeHealth, ProbeKeeper, ProbeScope, ProbeTask};
use crate::http::accept::serve_connections;
use crate::http::edge::Edge;

/// How long a graceful shutdown waits for open requests before it stops anyway, in
/// milliseconds. Long-polls end within a second of draining, so only slow uploads and stuck
/// clients are cut; 30 s stays well inside a service manager's usual 90 s stop timeout.
pub const DRAIN_TIMEOUT_MS: u64 = 30_000;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The broker could not open its data folder.
    #[error("cannot open the broker: {0}")]
    OpenBroker(#[source] BrokerError),
    /// Binding or serving the socket failed.
    #[error("cannot serve on the socket: {0}")]
    Io(#[from] std::io::Error),
    /// The cluster port could not be bound or the cluster node could not start.
    #[error("cannot start the cluster node: {0}")]
    Cluster(String),
    /// The alert rules could not be loaded or the webhook client could not be made.
    #[error("cannot start alerts: {0}")]
    Alerts(String),
    /// The background server task panicked or was cancelled.
    #[error("the server task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Installs the metrics recorder (once per process, before the broker records anything),
/// opens the broker at `settings.data_dir()`, serves the app on `listener`, and when
/// `shutdown` resolves: stops accepting, lets in-flight requests finish (pending long-polls
/// return what they have within a second; anything still open after [`DRAIN_TIMEOUT_MS`] is
/// left behind), then stops the synthetic probe (see [`crate::governance::probe`]) and the history sampler (writing the minutes being
/// filled) and shuts the broker down. The history's files are loaded before serving starts;
/// with `history = false` there are none and no sampler runs.
pub async fn serve(
    listener: TcpListener,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    crate::governance::metrics::install();
    let address = listener.local_addr()?;
    let (broker, cluster_port) = match settings.cluster() {
        None => {
            let broker = Broker::open(settings.broker_config())
                .await
                .map_err(ServeError::OpenBroker)?;
            (broker, None)
        }
        Some(cluster) => {
            let started = crate::cluster::start_node(&settings, cluster, address).await?;
            (started.broker, Some(started.port))
        }
    };
    tracing::info!(
        "wharf listening on http://{address}, data in {}, {}",
        settings.data_dir().display(),
        auth_summary(&settings)
    );
    let edge = Edge::new(
        settings.auth().clone(),
        settings.edge().clone(),
        settings.max_body_bytes(),
    );
    let history = match settings.history() {
        true => open_history(&settings).await?,
        false => Arc::new(History::off()),
    };
    let sampler = settings
        .history()
        .then(|| Sampler::start(Arc::clone(&history), Arc::clone(&broker)));
    let opened = Opened {
        broker,
        edge,
        history,
        sampler,
    };
    match cluster_port {
        None => serve_single(listener, &settings, opened, shutdown).await,
        Some(port) => serve_cluster(listener, &settings, port, opened, shutdown).await,
    }
}

/// What [`serve`] opens the same way on a single node and in a cluster.
struct Opened {
    broker: Arc<Broker>,
    edge: Edge,
    history: Arc<History>,
    sampler: Option<Sampler>,
}

/// The startup log's words on authentication.
fn auth_summary(settings: &Settings) -> String {
    if settings.auth().enabled() {
        format!("auth keys: {}", settings.auth().keys().describe())
    } else if settings.edge().check_host {
        "auth OFF (no keys configured)".to_owned()
    } else {
        "auth OFF (no keys configured), Host not checked (set allowed_hosts against DNS \
         rebinding)"
            .to_owned()
    }
}

/// A single node: its alerts and probe, the app until `shutdown`, then each task stopped and
/// the broker shut down.
async fn serve_single(
    listener: TcpListener,
    settings: &Settings,
    opened: Opened,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let Opened {
        broker,
        edge,
        history,
        sampler,
    } = opened;
    let probe_health = Arc::new(ProbeHealth::new(settings.probe_interval_ms()));
    let alerts = Alerts::load(settings.alerts(), &broker)
        .map_err(|error| ServeError::Alerts(error.to_string()))?
        .with_probe(Arc::clone(&probe_health))
        .with_produce_errors(Arc::clone(&history.produce_errors));
    let alerts = std::sync::Arc::new(alerts);
    let tasks = alerts
        .start(broker.clone())
        .map_err(|error| ServeError::Alerts(error.to_string()))?;
    let probe = ProbeTask::start(
        Arc::clone(&broker),
        ProbeScope::Single,
        Arc::clone(&probe_health),
        settings.probe_interval_ms(),
        settings.probe_hooks().cloned(),
    );
    let state = AppState::with_alerts(broker.clone(), edge, alerts)
        .with_history(history)
        .with_probe(probe_health);
    serve_app(listener, state, shutdown).await;
    if let Some(probe) = probe {
        probe.stop().await;
    }
    tasks.stop().await;
    if let Some(sampler) = sampler {
        sampler.stop().await;
    }
    broker.shutdown().await;
    Ok(())
}

/// A cluster node: its alerts, probe, probe keeper and preferred-leader task, the app until
/// `shutdown`, then each task stopped, the cluster port and the broker shut down.
async fn serve_cluster(
    listener: TcpListener,
    settings: &Settings,
    port: ClusterPort,
    opened: Opened,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let Opened {
        broker,
        edge,
        history,
        sampler,
    } = opened;
    let probe_health = Arc::new(ProbeHealth::new(settings.probe_interval_ms()));
    let alerts = Alerts::for_cluster(settings.alerts(), Arc::clone(&port.node), port.auth.clone())
        .map_err(|error| ServeError::Alerts(error.to_string()))?
        .with_probe(Arc::clone(&probe_health))
        .with_produce_errors(Arc::clone(&history.produce_errors));
    let alerts = Arc::new(alerts);
    let _ = port.alerts.set((Arc::clone(&broker), Arc::clone(&alerts)));
    let tasks = alerts
        .start(broker.clone())
        .map_err(|error| ServeError::Alerts(error.to_string()))?;
    let probe = ProbeTask::start(
        Arc::clone(&broker),
        ProbeScope::Cluster {
            node: port.node.node_id(),
        },
        Arc::clone(&probe_health),
        settings.probe_interval_ms(),
        settings.probe_hooks().cloned(),
    );
    let keeper = (settings.probe_interval_ms() > 0)
        .then(|| ProbeKeeper::start(Arc::clone(&port.node), port.liveness.clone()));
    let lead_back = settings
        .cluster()
        .and_then(|c| c.preferred_leader_after)
        .map(|after| LeadBackTask::start(Arc::clone(&port.node), port.liveness.clone(), after));
    let state = AppState::clustered(
        broker.clone(),
        edge,
        Arc::clone(&port.node),
        port.liveness.clone(),
        alerts,
    )
    .with_history(history)
    .with_probe(probe_health);
    serve_app(listener, state, shutdown).await;
    if let Some(lead_back) = lead_back {
        lead_back.stop().await;
    }
    if let Some(keeper) = keeper {
        keeper.stop().await;
    }
    if let Some(probe) = probe {
        probe.stop().await;
    }
    tasks.stop().await;
    if let Some(sampler) = sampler {
        sampler.stop().await;
    }
    port.shutdown().await;
    broker.shutdown().await;
    Ok(())
}

/// The per-minute history under the data folder, its retained minutes loaded (blocking pool).
async fn open_history(settings: &Settings) -> Result<Arc<History>, ServeError> {
    let data_dir = settings.data_dir().to_owned();
    let retention = settings.history_retention();
    let hooks = settings.history_hooks().cloned();
    let history =
        tokio::task::spawn_blocking(move || History::open(&data_dir, retention, hooks)).await??;
    Ok(Arc::new(history))
}

/// Serves `state`'s app until `shutdown` resolves, then drains: new connections are refused,
/// long-polls end, and open requests get at most [`DRAIN_TIMEOUT_MS`] to finish.
async fn serve_app(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let draining = state.clone();
    let signal = async move {
        shutdown.await;
        draining.begin_draining();
    };
    let edge = std::sync::Arc::clone(&state.edge);
    serve_connections(
        listener,
        app(state),
        &edge,
        signal,
        Duration::from_millis(DRAIN_TIMEOUT_MS),
    )
    .await;
}

/// Installs the Ctrl-C and (on Unix) SIGTERM handlers now and returns a future that resolves
/// on either. Call it before binding the listener (inside the runtime): a handler installed
/// only when the future is first polled left a window in which a SIGTERM sent as soon as the
/// server answered killed it undrained (seen as `signal: 15` in a test on a busy machine).
#[cfg(unix)]
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    async fn received(signal: std::io::Result<Signal>) {
        match signal {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    }
    let interrupt = received(signal(SignalKind::interrupt()));
    let terminate = received(signal(SignalKind::terminate()));
    async move {
        tokio::select! {
            () = interrupt => {},
            () = terminate => {},
        }
    }
}

/// Resolves on Ctrl-C.
#[cfg(not(unix))]
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A server running in a background task, stopped with [`RunningServer::stop`].
#[derive(Debug)]
pub struct RunningServer {
    address: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), ServeError>>,
}

impl RunningServer {
    /// Binds `settings.listen()` (use port 0 for an ephemeral port) and serves in the
    /// background.
    pub async fn start(settings: Settings) -> Result<RunningServer, ServeError> {
        let listener = crate::http::accept::bind(settings.listen())?;
        let address = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let task = tokio::spawn(serve(listener, settings, shutdown));
        Ok(RunningServer {
            address,
            stop,
            task,
        })
    }

    /// The bound address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://<address><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    /// Shuts down gracefully and waits for the server (and broker) to stop.
    pub async fn stop(self) -> Result<(), ServeError> {
        let _ = self.stop.send(());
        self.task.await?
    }
}
