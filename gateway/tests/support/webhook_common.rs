//! A webhook receiver for the alert tests: a real HTTP server on 127.0.0.1 that answers 204 to
//! every post on `/hook` and hands each body and `Wharf-Signature` to the test.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use gateway::governance::alerts::WebhookSigner;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc};

/// One post the receiver got.
#[derive(Debug)]
struct Received {
    signature: String,
    body: Bytes,
}

/// A webhook receiver on 127.0.0.1:0 that answers 204 to every post on `/hook`.
pub struct Receiver {
    /// Where rules should post: `http://127.0.0.1:<port>/hook`.
    pub url: String,
    events: Mutex<mpsc::Receiver<Received>>,
}

impl Receiver {
    /// Starts the receiver.
    pub async fn start() -> Receiver {
        let (sender, events) = mpsc::channel::<Received>(64);
        async fn hook(
            State(sender): State<mpsc::Sender<Received>>,
            headers: HeaderMap,
            body: Bytes,
        ) -> StatusCode {
            let signature = headers
                .get("wharf-signature")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let _ = sender.send(Received { signature, body }).await;
            StatusCode::NO_CONTENT
        }
        let app = Router::new().route("/hook", post(hook)).with_state(sender);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            url: format!("http://{address}/hook"),
            events: Mutex::new(events),
        }
    }

    /// The next event within `within`, its signature verified with `secret` (and refused
    /// with another key).
    pub async fn next_verified(&self, secret: &str, within: Duration) -> Value {
        let received = tokio::time::timeout(within, self.events.lock().await.recv())
            .await
            .expect("an event within the liveness timeout")
            .expect("receiver open");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        WebhookSigner::new(secret.as_bytes())
            .verify(&received.signature, &received.body, now)
            .unwrap_or_else(|e| panic!("signature {:?} does not verify: {e}", received.signature));
        assert!(
            WebhookSigner::new(b"another-secret-entirely-000000")
                .verify(&received.signature, &received.body, now)
                .is_err(),
            "another key must not verify"
        );
        serde_json::from_slice(&received.body).expect("JSON body")
    }
}
