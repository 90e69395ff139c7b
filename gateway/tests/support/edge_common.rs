//! Helpers for the edge tests: tokens, servers with auth, raw TCP requests.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gateway::config::{EdgeRaw, RawSettings};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The HS256 secret of key id `default` in the tests.
pub const SECRET: &str = "test-secret-test-secret-test-secret!";

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// A test fixture file.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Reads a fixture.
pub fn fixture_bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).expect("fixture")
}

/// Edge settings with the default HS256 secret.
pub fn with_secret(edge: EdgeRaw) -> RawSettings {
    RawSettings {
        edge: EdgeRaw {
            auth_hs256_secret: Some(SECRET.into()),
            ..edge
        },
        ..RawSettings::default()
    }
}

/// Settings with these edge limits and the per-principal request limit off, so a test's own
/// bursts are not throttled by it.
pub fn without_principal_limit(edge: EdgeRaw) -> RawSettings {
    RawSettings {
        edge: EdgeRaw {
            principal_requests_per_second: Some("0".into()),
            ..edge
        },
        ..RawSettings::default()
    }
}

/// Signs `claims` with `header` and `key`.
pub fn sign(header: &Header, claims: &Value, key: &EncodingKey) -> String {
    jsonwebtoken::encode(header, claims, key).expect("encode")
}

/// An HS256 token of the default key for `sub` with `scope`, valid for an hour.
pub fn token(sub: &str, scope: &str) -> String {
    token_with(sub, scope, json!({}))
}

/// Like [`token`] with extra claims merged in (they override).
pub fn token_with(sub: &str, scope: &str, extra: Value) -> String {
    let mut claims = json!({ "sub": sub, "scope": scope, "exp": now() + 3600 });
    if let (Some(map), Some(extra)) = (claims.as_object_mut(), extra.as_object()) {
        for (name, value) in extra {
            map.insert(name.clone(), value.clone());
        }
    }
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("default".into());
    sign(
        &header,
        &claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
}

/// Sends raw bytes on a new connection and reads until the server closes or `timeout`.
pub async fn raw_exchange(
    address: std::net::SocketAddr,
    request: &[u8],
    timeout: Duration,
) -> String {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(timeout, stream.read_to_end(&mut reply)).await;
    String::from_utf8_lossy(&reply).into_owned()
}

/// The status code of a raw HTTP reply.
pub fn status_of(reply: &str) -> u16 {
    reply
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}
