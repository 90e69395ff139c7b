//! [`Alerts`]: what the routes, the evaluator and the sender share on one node (the rule
//! book, the active alerts, the outbox, the settings), and [`Alerts::start`], which runs the
//! evaluator and the sender until
//! [`AlertTasks::stop`].

use std::sync::{Arc, RwLock};

use broker_core::Broker;
use broker_core::clock::steady_ms;
use broker_core::cluster_node::ClusterNode;
use broker_core::sync::{read, write};
use rand::RngCore;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::book::RuleBook;
use super::cluster_figures::{Clustered, FiguresClient};
use super::delivery_schedule::RetrySchedule;
use super::outbox::{Outbox, send_loop, webhook_client};
use super::signature::WebhookSigner;
use super::watcher::{ActiveAlert, evaluate_loop};
use super::webhook_policy::WebhookPolicy;
use crate::cluster::PeerAuth;
use crate::config::AlertSettings;
use crate::governance::probe::ProbeHealth;
use crate::governance::produce_errors::ProduceErrors;
use crate::http::problem::ApiError;

/// Bytes of the server secret made at start when none is configured.
const GENERATED_SECRET_BYTES: usize = 32;

/// The alerts of one node.
#[derive(Debug)]
pub struct Alerts {
    book: RuleBook,
    active: RwLock<Vec<ActiveAlert>>,
    outbox: Arc<Outbox>,
    policy: WebhookPolicy,
    server_signer: WebhookSigner,
    tick_ms: u64,
    started_ms: u64,
    probe: Arc<ProbeHealth>,
    produce_errors: Arc<ProduceErrors>,
    /// On a cluster node: its part (only the controller leader evaluates).
    clustered: Option<Clustered>,
}

impl Alerts {
    /// The alerts of a node with `settings`, its rules `book`. Without a configured secret
    /// one is made now and a warning says that receivers cannot verify events across a
    /// restart.
    pub fn new(settings: &AlertSettings, book: RuleBook) -> Alerts {
        let secret = match settings.secret() {
            Some(secret) => secret.to_vec(),
            None => {
                let mut secret = vec![0; GENERATED_SECRET_BYTES];
                rand::rngs::OsRng.fill_bytes(&mut secret);
                secret
            }
        };
        Alerts {
            book,
            active: RwLock::new(Vec::new()),
            outbox: Arc::new(Outbox::default()),
            policy: settings.policy().clone(),
            server_signer: WebhookSigner::new(&secret),
            tick_ms: settings.tick_ms(),
            started_ms: steady_ms(),
            probe: Arc::new(ProbeHealth::off()),
            produce_errors: Arc::new(ProduceErrors::default()),
            clustered: None,
        }
    }

    /// These alerts, their `probe` rules sampling `probe` (without it, the node does not
    /// probe and such rules never fire).
    pub fn with_probe(mut self, probe: Arc<ProbeHealth>) -> Alerts {
        self.probe = probe;
        self
    }

    /// The synthetic probe's state, the value of `probe` rules.
    pub fn probe(&self) -> &ProbeHealth {
        &self.probe
    }

    /// These alerts, their `produce_errors` rules reading `counter`: the node's, which the
    /// request middleware feeds ([`crate::governance::history::History::produce_errors`]). Without it
    /// they read a counter nothing counts.
    pub fn with_produce_errors(mut self, counter: Arc<ProduceErrors>) -> Alerts {
        self.produce_errors = counter;
        self
    }

    /// The node's failed produce requests, the value of `produce_errors` rules (summed over
    /// the nodes in a cluster).
    pub fn produce_errors(&self) -> &ProduceErrors {
        &self.produce_errors
    }

    /// The alerts of cluster node `node`: its rules are the cluster metadata's
    /// ([`RuleBook::clustered`]), and it evaluates them while it leads the controller,
    /// gathering every node's figures with `auth` ([`super::cluster_figures`]).
    pub fn for_cluster(
        settings: &AlertSettings,
        node: Arc<ClusterNode>,
        auth: PeerAuth,
    ) -> Result<Alerts, ApiError> {
        warn_without_secret(settings);
        let client = FiguresClient::new(auth).map_err(|error| ApiError::Internal {
            detail: format!("the alert figures client: {error}"),
        })?;
        let book = RuleBook::clustered(Arc::clone(&node), settings.policy().clone());
        let mut alerts = Alerts::new(settings, book);
        alerts.clustered = Some(Clustered::new(node, client));
        Ok(alerts)
    }

    /// On a cluster node: its part in alerts.
    pub fn clustered(&self) -> Option<&Clustered> {
        self.clustered.as_ref()
    }

    /// The alerts of a node whose rules are stored in `broker`.
    pub fn load(settings: &AlertSettings, broker: &Broker) -> Result<Alerts, ApiError> {
        let book = RuleBook::load(broker, settings.policy())?;
        warn_without_secret(settings);
        Ok(Alerts::new(settings, book))
    }

    /// The rules.
    pub fn book(&self) -> &RuleBook {
        &self.book
    }

    /// Where webhooks may go.
    pub fn policy(&self) -> &WebhookPolicy {
        &self.policy
    }

    /// The alerts firing as of the last evaluation.
    pub fn active(&self) -> Vec<ActiveAlert> {
        read(&self.active).clone()
    }

    pub(super) fn set_active(&self, active: Vec<ActiveAlert>) {
        *write(&self.active) = active;
    }

    /// The queue in front of the sender.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    /// The signer of rules without their own secret.
    pub fn server_signer(&self) -> &WebhookSigner {
        &self.server_signer
    }

    /// How often rules are evaluated, in ms.
    pub fn tick_ms(&self) -> u64 {
        self.tick_ms
    }

    /// Steady ms at which this node's alerts started: a subscription nobody received from
    /// since counts as quiet from then.
    pub fn started_ms(&self) -> u64 {
        self.started_ms
    }

    /// Starts the evaluator, reading `broker` (and, in a cluster, every node's figures), and
    /// the sender.
    pub fn start(self: &Arc<Self>, broker: Arc<Broker>) -> reqwest::Result<AlertTasks> {
        let client = webhook_client()?;
        let (stop, stopped) = watch::channel(false);
        let evaluator = tokio::spawn(evaluate_loop(Arc::clone(self), broker, stopped.clone()));
        let sender = tokio::spawn(send_loop(
            Arc::clone(&self.outbox),
            client,
            RetrySchedule::default(),
            stopped,
        ));
        Ok(AlertTasks {
            stop,
            tasks: vec![evaluator, sender],
        })
    }
}

fn warn_without_secret(settings: &AlertSettings) {
    if settings.secret().is_none() {
        tracing::warn!(
            "no alert_secret configured: alert webhooks of rules without their own secret \
             are signed with a random secret made at this start, which receivers cannot \
             know (set alert_secret or give rules a secret)"
        );
    }
}

/// The running evaluator and sender.
#[derive(Debug)]
pub struct AlertTasks {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl AlertTasks {
    /// Stops both tasks and waits for them; events still queued are dropped.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}
