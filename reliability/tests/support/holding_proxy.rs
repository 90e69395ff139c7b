//! [`HoldingProxy`]: a TCP proxy in front of one node whose client-to-node direction can be
//! held: while held, whatever a client sends waits at the proxy (the request is written, the
//! node has not seen it), and on release it goes on, late. The node-to-client direction always
//! flows. This is the "delay a control message in the network" fault of the plan, done by
//! hand so the test decides exactly how late it is.
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections at once (more are closed at accept), one
//! [`CHUNK_BYTES`] chunk held per connection (the rest stays in the kernel's socket buffers),
//! and every wait has a deadline: connecting to the node [`CONNECT_TIMEOUT`], a connection idle
//! [`IDLE_TIMEOUT`], a chunk held [`HOLD_TIMEOUT`] (then its connection is closed).
//! Dropping the proxy stops it and closes every connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// Connections served at once: a test's clients open a few dozen; more means a leak.
pub const MAX_CONNECTIONS: usize = 256;
/// Bytes read (and, while held, kept) per read: an ack of a thousand receipts fits.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Bound on connecting to the node: loopback connects in microseconds.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// A connection with nothing to read or write this long is closed (an idle keep-alive one).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on holding one chunk: longer than any hold a test makes (a few lease times).
pub const HOLD_TIMEOUT: Duration = Duration::from_secs(30);

/// A proxy listening on a loopback port, forwarding to one node.
pub struct HoldingProxy {
    addr: SocketAddr,
    valve: watch::Sender<bool>,
    held: Arc<AtomicUsize>,
    accepting: tokio::task::JoinHandle<()>,
}

impl HoldingProxy {
    /// Listens on a free loopback port and forwards every connection to `node`, open.
    pub async fn start(node: SocketAddr) -> std::io::Result<HoldingProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (valve, open) = watch::channel(true);
        let held = Arc::new(AtomicUsize::new(0));
        let accepting = tokio::spawn(accept_loop(listener, node, open, held.clone()));
        Ok(HoldingProxy {
            addr,
            valve,
            held,
            accepting,
        })
    }

    /// The proxy's base URL, `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// From now on, bytes from clients wait at the proxy.
    pub fn hold(&self) {
        self.valve.send_replace(false);
    }

    /// Lets every held byte go on, and what follows.
    pub fn release(&self) {
        self.valve.send_replace(true);
    }

    /// Connections whose client bytes are waiting at the proxy now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Waits until at least `count` connections are held, for at most `timeout`.
    pub async fn wait_held(&self, count: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.held() < count {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }
}

impl Drop for HoldingProxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// Accepts connections until aborted; each runs in a task of a set dropped (aborted) with it.
async fn accept_loop(
    listener: TcpListener,
    node: SocketAddr,
    open: watch::Receiver<bool>,
    held: Arc<AtomicUsize>,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            // Out of file descriptors, say: give the process a moment rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        while connections.try_join_next().is_some() {}
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let (open, held) = (open.clone(), held.clone());
        connections.spawn(async move {
            let _slot = slot;
            let _ = serve(client, node, open, held).await;
        });
    }
}

/// Pipes one client connection to a new connection to the node until either side ends.
async fn serve(
    client: TcpStream,
    node: SocketAddr,
    open: watch::Receiver<bool>,
    held: Arc<AtomicUsize>,
) -> std::io::Result<()> {
    let upstream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(node)).await??;
    let (client_read, client_write) = client.into_split();
    let (node_read, node_write) = upstream.into_split();
    let up = pump(client_read, node_write, Some((open, held)));
    let down = pump(node_read, client_write, None);
    tokio::pin!(up, down);
    // A client that is done sending still gets its answer; any other end (the node closing,
    // an error, a timeout) ends the connection.
    tokio::select! {
        result = &mut up => {
            result?;
            down.await
        }
        result = &mut down => result,
    }
}

/// Copies `from` to `to` chunk by chunk; with a valve, each chunk waits while it is shut.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    mut valve: Option<(watch::Receiver<bool>, Arc<AtomicUsize>)>,
) -> std::io::Result<()> {
    let mut chunk = vec![0_u8; CHUNK_BYTES];
    loop {
        let read = tokio::time::timeout(IDLE_TIMEOUT, from.read(&mut chunk)).await??;
        if read == 0 {
            return to.shutdown().await;
        }
        if let Some((open, held)) = valve.as_mut() {
            wait_open(open, held).await?;
        }
        tokio::time::timeout(IDLE_TIMEOUT, to.write_all(&chunk[..read])).await??;
    }
}

/// Returns once the valve is open, counting this connection as held meanwhile; an error after
/// [`HOLD_TIMEOUT`].
async fn wait_open(open: &mut watch::Receiver<bool>, held: &AtomicUsize) -> std::io::Result<()> {
    if *open.borrow() {
        return Ok(());
    }
    held.fetch_add(1, Ordering::SeqCst);
    let opened = tokio::time::timeout(HOLD_TIMEOUT, open.wait_for(|open| *open)).await;
    held.fetch_sub(1, Ordering::SeqCst);
    match opened {
        Ok(Ok(_)) => Ok(()),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "held past the proxy's hold timeout",
        )),
    }
}
