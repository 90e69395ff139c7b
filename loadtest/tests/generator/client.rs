//! The load generator's HTTP/1.1 client against scripted servers on 127.0.0.1:0: a kept-alive
//! socket is reused, a closed one is redialled (after `connection: close`, after the server
//! dropped it while idle, after a timeout), and chunked replies arrive whole.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use loadtest::client::{Connection, RequestError};
use loadtest::target::Target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What the scripted server does with each request on a connection.
#[derive(Debug, Clone, Copy)]
enum Script {
    /// Answers every request `200 ok`, keeping the connection.
    KeepAlive,
    /// Answers one request and closes the socket without saying so.
    OneThenDrop,
    /// Answers with `connection: close` and closes.
    SaysClose,
    /// Answers with a chunked body, keeping the connection.
    Chunked,
    /// Reads the request and never answers.
    Silent,
    /// Answers every request after [`SLOW_REPLY`], keeping the connection.
    Slow,
}

/// How long [`Script::Slow`] takes to answer.
const SLOW_REPLY: Duration = Duration::from_millis(250);

/// Serves `script` on every connection; counts the connections accepted.
async fn scripted(script: Script) -> (Target, Arc<AtomicUsize>) {
    let (target, accepted, _closed) = scripted_with_closes(script).await;
    (target, accepted)
}

/// [`scripted`], and a message each time the server has closed a connection.
async fn scripted_with_closes(
    script: Script,
) -> (Target, Arc<AtomicUsize>, mpsc::UnboundedReceiver<()>) {
    let (closes, closed) = mpsc::unbounded_channel();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            let closes = closes.clone();
            tokio::spawn(async move {
                serve(socket, script).await;
                let _ = closes.send(());
            });
        }
    });
    let target = Target::parse(&format!("http://{address}")).expect("loopback");
    (target, accepted, closed)
}

async fn serve(mut socket: TcpStream, script: Script) {
    while read_request(&mut socket).await {
        let reply: &[u8] = match script {
            Script::KeepAlive | Script::OneThenDrop => {
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
            }
            Script::SaysClose => b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
            Script::Chunked => {
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nwhol\r\n1\r\ne\r\n0\r\n\r\n"
            }
            Script::Slow => {
                tokio::time::sleep(SLOW_REPLY).await;
                b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
            }
            Script::Silent => {
                tokio::time::sleep(Duration::from_secs(60)).await;
                return;
            }
        };
        if socket.write_all(reply).await.is_err() {
            return;
        }
        if matches!(script, Script::OneThenDrop | Script::SaysClose) {
            return;
        }
    }
}

/// Reads one request (head, then a `content-length` body); false at the end of the stream.
async fn read_request(socket: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        if !matches!(socket.read(&mut byte).await, Ok(1)) {
            return false;
        }
        seen.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&seen).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length: "))
        .map_or(0, |n| n.trim().parse::<usize>().expect("a length"));
    let mut body = vec![0u8; length];
    socket.read_exact(&mut body).await.is_ok()
}

#[tokio::test]
async fn a_kept_alive_socket_carries_every_request() {
    let (target, accepted) = scripted(Script::KeepAlive).await;
    let mut connection = Connection::new(target, Duration::from_secs(5));
    for _ in 0..5 {
        let reply = connection.post("/p", Bytes::from_static(b"{}")).await;
        assert_eq!(&reply.expect("answered").body[..], b"ok");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_socket_the_server_dropped_while_idle_is_redialled() {
    let (target, accepted, mut closed) = scripted_with_closes(Script::OneThenDrop).await;
    let mut connection = Connection::new(target, Duration::from_secs(5));
    for round in 1..=3 {
        let reply = connection.get("/readyz").await;
        assert!(reply.expect("answered").is_success(), "round {round}");
        closed.recv().await.expect("the server closed the socket");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn connection_close_makes_the_next_request_dial_again() {
    let (target, accepted) = scripted(Script::SaysClose).await;
    let mut connection = Connection::new(target, Duration::from_secs(5));
    for _ in 0..3 {
        assert!(connection.get("/").await.expect("answered").is_success());
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn chunked_replies_arrive_whole_on_one_socket() {
    let (target, accepted) = scripted(Script::Chunked).await;
    let mut connection = Connection::new(target, Duration::from_secs(5));
    for _ in 0..3 {
        let reply = connection.post("/p", Bytes::from_static(b"{}")).await;
        assert_eq!(&reply.expect("answered").body[..], b"whole");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_timed_out_request_drops_its_socket() {
    let (target, accepted) = scripted(Script::Silent).await;
    let mut connection = Connection::new(target, Duration::from_millis(100));
    for _ in 0..2 {
        let reply = connection.post("/p", Bytes::from_static(b"{}")).await;
        assert_eq!(reply.err(), Some(RequestError::Timeout));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn each_request_gets_the_whole_timeout_whenever_it_starts() {
    let (target, accepted) = scripted(Script::Slow).await;
    let timeout = SLOW_REPLY + Duration::from_millis(150);
    let mut connection = Connection::new(target, timeout);
    for _ in 0..3 {
        // The second and third requests end after the deadline of the one before them.
        let reply = connection.get("/").await;
        assert!(reply.expect("answered in time").is_success());
    }
    // An idle spell longer than the timeout: the alarm goes off with no request running.
    tokio::time::sleep(timeout * 2).await;
    assert!(connection.get("/").await.expect("answered").is_success());
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_path_that_would_break_the_request_line_is_refused_unsent() {
    let (target, accepted) = scripted(Script::KeepAlive).await;
    let mut connection = Connection::new(target, Duration::from_secs(5));
    let refused = connection.get("/a b").await;
    assert_eq!(refused.err(), Some(RequestError::Invalid));
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    drop(listener);
    let target = Target::parse(&format!("http://{address}")).expect("loopback");
    let mut connection = Connection::new(target, Duration::from_secs(5));
    assert_eq!(connection.get("/").await.err(), Some(RequestError::Connect));
}
