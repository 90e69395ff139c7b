//! Bad tokens: every one gets 401 `unauthorized` with `WWW-Authenticate: Bearer`, never
//! echoes the token, and changes nothing; good tokens of every key type pass.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use gateway::auth::KeySpec;
use gateway::config::{EdgeRaw, RawSettings};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use wharf_reliability::CaseLine;

use crate::support::common::{Harness, expect_problem, json_of};
use crate::support::edge_common::{SECRET, fixture, fixture_bytes, now, sign, with_secret};

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "wharf-test";

fn key_spec(kid: &str, alg: &str, file: &str) -> KeySpec {
    KeySpec {
        kid: kid.into(),
        alg: alg.into(),
        secret: None,
        file: Some(fixture(file)),
    }
}

async fn server(jwks: &std::path::Path) -> Harness {
    let raw = with_secret(EdgeRaw {
        auth_issuer: Some(ISSUER.into()),
        auth_audience: Some(AUDIENCE.into()),
        auth_leeway_secs: Some("5".into()),
        auth_jwks_file: Some(jwks.display().to_string()),
        ..EdgeRaw::default()
    });
    Harness::start_with(RawSettings {
        auth_keys: vec![
            key_spec("rsa", "RS256", "rsa_public.pem"),
            key_spec("ec", "ES256", "ec_public.pem"),
            key_spec("ed", "EdDSA", "ed_public.pem"),
        ],
        ..raw
    })
    .await
}

/// Claims a good token has; `patch` overrides or (with `null`) removes some.
fn claims(patch: Value) -> Value {
    let mut claims = json!({
        "sub": "svc-test", "scope": "admin:*", "exp": now() + 600,
        "iss": ISSUER, "aud": AUDIENCE,
    });
    let map = claims.as_object_mut().expect("object");
    for (name, value) in patch.as_object().expect("object") {
        if value.is_null() {
            map.remove(name);
        } else {
            map.insert(name.clone(), value.clone());
        }
    }
    claims
}

fn header(alg: Algorithm, kid: Option<&str>) -> Header {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    header
}

fn hs(kid: Option<&str>, claims: &Value) -> String {
    sign(
        &header(Algorithm::HS256, kid),
        claims,
        &EncodingKey::from_secret(SECRET.as_bytes()),
    )
}

fn rsa_key(file: &str) -> EncodingKey {
    EncodingKey::from_rsa_pem(&fixture_bytes(file)).expect("rsa")
}

fn b64(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).expect("json"))
}

/// A token with a hand-written header, signed (HS256, default secret) over what it says.
fn hand_made(header: Value, claims: &Value) -> String {
    use hmac::{Hmac, Mac};
    let signing_input = format!("{}.{}", b64(&header), b64(claims));
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("hmac");
    mac.update(signing_input.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{signature}")
}

fn flip_last_char(text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let last = chars.len() - 2;
    chars[last] = if chars[last] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

fn bad_tokens() -> Vec<(&'static str, Option<String>)> {
    let good = hs(None, &claims(json!({})));
    let parts: Vec<&str> = good.split('.').collect();
    let rsa_public_as_secret = sign(
        &header(Algorithm::HS256, Some("rsa")),
        &claims(json!({})),
        &EncodingKey::from_secret(&fixture_bytes("rsa_public.pem")),
    );
    let rsa_public_as_default_secret = sign(
        &header(Algorithm::HS256, None),
        &claims(json!({})),
        &EncodingKey::from_secret(&fixture_bytes("rsa_public.pem")),
    );
    let mut jku = header(Algorithm::HS256, None);
    jku.jku = Some("https://attacker.test/jwks.json".into());
    let mut x5u = header(Algorithm::HS256, None);
    x5u.x5u = Some("https://attacker.test/cert.pem".into());
    let mut with_jwk = header(Algorithm::RS256, Some("rsa"));
    with_jwk.jwk = Some(
        Jwk::from_encoding_key(&rsa_key("other_rsa_private.pem"), Algorithm::RS256).expect("jwk"),
    );
    let secret = EncodingKey::from_secret(SECRET.as_bytes());
    let altered_payload = format!(
        "{}.{}.{}",
        parts[0],
        b64(&claims(json!({"scope": "admin:* produce:*"}))),
        parts[2]
    );
    vec![
        ("no Authorization header", None),
        ("Basic scheme", Some("Basic c3ZjOnB3".into())),
        ("empty bearer", Some("Bearer ".into())),
        ("not a JWT", Some("Bearer not-a-jwt".into())),
        (
            "two parts",
            Some(format!("Bearer {}.{}", parts[0], parts[1])),
        ),
        (
            "alg none",
            Some(format!(
                "Bearer {}.{}.",
                b64(&json!({"alg": "none", "typ": "JWT"})),
                parts[1]
            )),
        ),
        (
            "alg None with a signature",
            Some(format!(
                "Bearer {}.{}.{}",
                b64(&json!({"alg": "None"})),
                parts[1],
                parts[2]
            )),
        ),
        (
            "alg HS512 (unsupported)",
            Some(format!(
                "Bearer {}",
                sign(&header(Algorithm::HS512, None), &claims(json!({})), &secret)
            )),
        ),
        (
            "RS256 public key as HS256 secret, kid rsa",
            Some(format!("Bearer {rsa_public_as_secret}")),
        ),
        (
            "RS256 public key as HS256 secret, default kid",
            Some(format!("Bearer {rsa_public_as_default_secret}")),
        ),
        (
            "HS256 under an RS256 kid",
            Some(format!("Bearer {}", hs(Some("rsa"), &claims(json!({}))))),
        ),
        (
            "ES256 token under the EdDSA kid",
            Some(format!(
                "Bearer {}",
                sign(
                    &header(Algorithm::ES256, Some("ed")),
                    &claims(json!({})),
                    &EncodingKey::from_ec_pem(&fixture_bytes("ec_private.pem")).expect("ec")
                )
            )),
        ),
        (
            "unknown kid",
            Some(format!("Bearer {}", hs(Some("nope"), &claims(json!({}))))),
        ),
        (
            "wrong HS256 secret",
            Some(format!(
                "Bearer {}",
                sign(
                    &header(Algorithm::HS256, None),
                    &claims(json!({})),
                    &EncodingKey::from_secret(b"another-secret-another-secret-xx")
                )
            )),
        ),
        (
            "RS256 signed by another key",
            Some(format!(
                "Bearer {}",
                sign(
                    &header(Algorithm::RS256, Some("rsa")),
                    &claims(json!({})),
                    &rsa_key("other_rsa_private.pem")
                )
            )),
        ),
        (
            "expired beyond leeway",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"exp": now() - 60})))
            )),
        ),
        (
            "nbf in the future",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"nbf": now() + 60})))
            )),
        ),
        (
            "missing exp",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"exp": null})))
            )),
        ),
        (
            "exp not a number",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"exp": "tomorrow"})))
            )),
        ),
        (
            "missing aud",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"aud": null})))
            )),
        ),
        (
            "wrong aud",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"aud": "someone-else"})))
            )),
        ),
        (
            "missing iss",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"iss": null})))
            )),
        ),
        (
            "wrong iss",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"iss": "https://evil.test"})))
            )),
        ),
        (
            "missing sub",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"sub": null})))
            )),
        ),
        (
            "stripped signature",
            Some(format!("Bearer {}.{}.", parts[0], parts[1])),
        ),
        (
            "altered signature",
            Some(format!("Bearer {}", flip_last_char(&good))),
        ),
        ("altered payload", Some(format!("Bearer {altered_payload}"))),
        (
            "jku header",
            Some(format!(
                "Bearer {}",
                sign(&jku, &claims(json!({})), &secret)
            )),
        ),
        (
            "x5u header",
            Some(format!(
                "Bearer {}",
                sign(&x5u, &claims(json!({})), &secret)
            )),
        ),
        (
            "embedded jwk header",
            Some(format!(
                "Bearer {}",
                sign(
                    &with_jwk,
                    &claims(json!({})),
                    &rsa_key("other_rsa_private.pem")
                )
            )),
        ),
        (
            "crit header",
            Some(format!(
                "Bearer {}",
                hand_made(json!({"alg": "HS256", "crit": ["exp"]}), &claims(json!({})))
            )),
        ),
        (
            "16 KB token",
            Some(format!(
                "Bearer {}",
                hs(None, &claims(json!({"pad": "x".repeat(16 * 1024)})))
            )),
        ),
    ]
}

fn write_jwks(dir: &std::path::Path) -> std::path::PathBuf {
    let jwk =
        Jwk::from_encoding_key(&rsa_key("other_rsa_private.pem"), Algorithm::RS256).expect("jwk");
    let mut jwk = serde_json::to_value(jwk).expect("json");
    jwk["kid"] = json!("jwks-rsa");
    jwk["alg"] = json!("RS256");
    let path = dir.join("jwks.json");
    std::fs::write(&path, json!({ "keys": [jwk] }).to_string()).expect("write");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_token_gets_401_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let harness = server(&write_jwks(dir.path())).await;
    let cases = bad_tokens();
    assert!(cases.len() >= 25, "{} cases", cases.len());
    let mut accepted = 0;
    for (index, (case, authorization)) in cases.iter().enumerate() {
        let mut request = harness
            .client
            .post(harness.url("/v1/topics"))
            .json(&json!({ "name": format!("bad-{index}") }));
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let response = request.send().await.expect("request");
        if response.status().as_u16() < 400 {
            accepted += 1;
        }
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer"),
            "{case}: challenge {challenge:?}"
        );
        let problem = expect_problem(response, 401, "unauthorized").await;
        if let Some(token) = authorization
            .as_deref()
            .and_then(|v| v.strip_prefix("Bearer "))
        {
            let text = problem.to_string();
            for piece in token.split('.').filter(|piece| piece.len() >= 12) {
                assert!(
                    !text.contains(piece),
                    "{case}: the reply echoes the token: {text}"
                );
            }
        }
    }
    let admin = hs(None, &claims(json!({})));
    let list = harness
        .client
        .get(harness.url("/v1/topics"))
        .bearer_auth(&admin)
        .send()
        .await
        .expect("request");
    let topics = json_of(list, 200).await;
    let created = topics["topics"].as_array().map_or(0, Vec::len);
    CaseLine::new("G1", "jwt-matrix")
        .must_be_zero("bad tokens accepted", accepted, cases.len() as u64)
        .must_be_zero(
            "topics created by bad tokens",
            created as u64,
            cases.len() as u64,
        )
        .record();
    assert_eq!(topics["topics"], json!([]), "a bad token created something");
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn good_tokens_of_every_key_type_pass() {
    let dir = tempfile::tempdir().expect("dir");
    let harness = server(&write_jwks(dir.path())).await;
    let base = claims(json!({}));
    let tokens = [
        ("HS256 default kid", hs(None, &base)),
        ("HS256 named default", hs(Some("default"), &base)),
        (
            "expired within leeway",
            hs(None, &claims(json!({"exp": now() - 2}))),
        ),
        (
            "RS256",
            sign(
                &header(Algorithm::RS256, Some("rsa")),
                &base,
                &rsa_key("rsa_private.pem"),
            ),
        ),
        (
            "ES256",
            sign(
                &header(Algorithm::ES256, Some("ec")),
                &base,
                &EncodingKey::from_ec_pem(&fixture_bytes("ec_private.pem")).expect("ec"),
            ),
        ),
        (
            "EdDSA",
            sign(
                &header(Algorithm::EdDSA, Some("ed")),
                &base,
                &EncodingKey::from_ed_pem(&fixture_bytes("ed_private.pem")).expect("ed"),
            ),
        ),
        (
            "JWKS RS256",
            sign(
                &header(Algorithm::RS256, Some("jwks-rsa")),
                &base,
                &rsa_key("other_rsa_private.pem"),
            ),
        ),
    ];
    for (case, token) in tokens {
        let response = harness
            .client
            .get(harness.url("/v1/topics"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("request");
        assert_eq!(
            response.status(),
            200,
            "{case}: {}",
            response.text().await.unwrap_or_default()
        );
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_are_open_and_everything_else_needs_a_token() {
    let dir = tempfile::tempdir().expect("dir");
    let harness = server(&write_jwks(dir.path())).await;
    assert_eq!(harness.get("/healthz").await.status(), 200);
    assert_eq!(harness.get("/readyz").await.status(), 200);
    for path in [
        "/docs",
        "/openapi.json",
        "/metrics",
        "/v1/topics",
        "/nowhere",
        "/v1/cluster",
    ] {
        expect_problem(harness.get(path).await, 401, "unauthorized").await;
    }
    harness.stop().await;
}

#[test]
fn a_short_secret_stops_the_binary_with_a_clear_message() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wharf"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("WHARF_AUTH_HS256_SECRET", "too-short")
        .env(
            "WHARF_DATA_DIR",
            std::env::temp_dir().join("wharf-short-secret"),
        )
        .output()
        .expect("wharf runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("at least 32 bytes"), "{stderr}");
    assert!(
        !stderr.contains("too-short"),
        "the secret is printed: {stderr}"
    );
}

#[test]
fn wharf_token_mints_what_the_server_accepts_and_refuses_a_short_secret() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wharf"))
        .args([
            "token",
            "--sub",
            "svc-a",
            "--scope",
            "produce:orders.* consume:orders.*",
            "--ttl",
            "1h",
        ])
        .env("WHARF_AUTH_HS256_SECRET", SECRET)
        .output()
        .expect("wharf runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = String::from_utf8(output.stdout).expect("utf-8");
    let mut keys = gateway::auth::KeySet::default();
    keys.insert(
        "default",
        gateway::auth::keys::hs256("default", SECRET.as_bytes()).expect("key"),
    )
    .expect("kid");
    let principal = gateway::auth::Authenticator::new(keys, None, None, 5)
        .authenticate(Some(format!("Bearer {}", token.trim()).as_bytes()))
        .expect("the minted token verifies");
    assert_eq!(principal.subject, "svc-a");
    assert!(
        principal
            .grants
            .allows(gateway::auth::Action::Consume, "orders.eu")
    );
    let short = std::process::Command::new(env!("CARGO_BIN_EXE_wharf"))
        .args(["token", "--sub", "svc-a"])
        .env("WHARF_AUTH_HS256_SECRET", "short")
        .output()
        .expect("wharf runs");
    assert_eq!(short.status.code(), Some(2));
}

#[test]
fn anonymous_on_a_network_address_refuses_to_start() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wharf"))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("WHARF_AUTH_HS256_SECRET")
        .env_remove("WHARF_ALLOW_ANONYMOUS")
        .env("WHARF_DATA_DIR", std::env::temp_dir().join("wharf-anon"))
        .output()
        .expect("wharf runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--allow-anonymous"), "{stderr}");
}
