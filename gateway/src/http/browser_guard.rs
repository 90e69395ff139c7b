//! The browser guard: the edge's first check, on every route, against web pages that make a
//! browser on the operator's machine (or network) call Wharf. A browser lets any page send
//! "simple" requests to any address and only hides the answer, yet the request still runs: an
//! SSE `GET …/stream` leases messages, a `text/plain` produce stores one.
//!
//! The rules, in order:
//! 1. **Host** ([`host_allowed`]), when the server is anonymous and [`EdgeSettings::check_host`]
//!    is set (a loopback listen address, or `allowed_hosts` given): the `Host` header must be
//!    an IP literal, `localhost` or a name under `.localhost`, or a name in `allowed_hosts`;
//!    else 403 `host_not_allowed`. A page that rebinds its own name (`evil.example`) to
//!    127.0.0.1 sends same-origin requests that carry that name, so this is what stops DNS
//!    rebinding; an IP literal or a `.localhost` name cannot be rebound. A request without
//!    `Host` does not come from a browser and passes.
//! 2. **Origin** ([`origin_allowed`]), always: a request with an `Origin` header passes only
//!    when that origin is the server's own (its host and port equal the `Host` header,
//!    scheme `http` or `https`) or is in `allowed_origins`; else 403 `origin_not_allowed`.
//!    `Origin: null` (sandboxed frames, `file:` pages) never passes.
//! 3. **Sec-Fetch-Site**, when there is no `Origin`: `cross-site` or `same-site` means a
//!    browser sent a no-cors request or a navigation for another site's (or port's) page,
//!    e.g. `<img src=".../stream">`, which carries no `Origin`: 403 `origin_not_allowed`.
//!
//! Requests without `Origin` or `Sec-Fetch-Site` (curl, the SDKs, k6, servers) and with a
//! loopback `Host` pass without an allocation.

use std::net::{Ipv4Addr, Ipv6Addr};

use axum::http::{HeaderMap, HeaderName, header};

use crate::config::EdgeSettings;
use crate::http::problem::ApiError;

/// Where a browser says how the page that caused a request relates to its target.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Checks a request's headers against the rules of the module docs. `anonymous`: the server
/// has no verification keys.
pub(crate) fn admit(
    headers: &HeaderMap,
    settings: &EdgeSettings,
    anonymous: bool,
) -> Result<(), ApiError> {
    let host = headers.get(header::HOST).map(|value| value.to_str());
    if anonymous && settings.check_host {
        match host {
            Some(Ok(host)) if host_allowed(host, &settings.allowed_hosts) => {}
            None => {}
            Some(value) => {
                return Err(ApiError::HostNotAllowed {
                    host: value.unwrap_or("(not ASCII)").to_owned(),
                });
            }
        }
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("(not ASCII)");
        let own = host.and_then(Result::ok).unwrap_or_default();
        if !origin_allowed(origin, own, &settings.allowed_origins) {
            return Err(ApiError::OriginNotAllowed {
                origin: origin.to_owned(),
            });
        }
    } else if let Some(site) = headers.get(SEC_FETCH_SITE)
        && matches!(site.as_bytes(), b"cross-site" | b"same-site")
    {
        return Err(ApiError::OriginNotAllowed {
            origin: "another site's page (Sec-Fetch-Site without Origin)".to_owned(),
        });
    }
    Ok(())
}

/// Whether `host` (a `Host` header: a name or address, with or without `:port`) is an IP
/// literal, `localhost`, a name under `.localhost`, or one of `allowed` (lower case, without
/// a trailing dot).
pub(crate) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Some(name) = host_name(host) else {
        return false;
    };
    if name.parse::<Ipv4Addr>().is_ok() || is_localhost(name) {
        return true;
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().is_ok();
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    allowed.iter().any(|entry| entry.eq_ignore_ascii_case(name))
}

/// The name of a `Host` header without its port (an IPv6 literal keeps its brackets); `None`
/// when the port is not a number.
fn host_name(host: &str) -> Option<&str> {
    let split = match host.rfind(':') {
        Some(colon) if !host[colon..].contains(']') => colon,
        _ => return Some(host),
    };
    let (name, port) = host.split_at(split);
    port[1..]
        .bytes()
        .all(|byte| byte.is_ascii_digit())
        .then_some(name)
}

/// `localhost`, `localhost.` or a name under `.localhost` (RFC 6761: they resolve to
/// loopback, and no one can register them).
fn is_localhost(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name).as_bytes();
    let suffix = b"localhost";
    let Some(start) = name.len().checked_sub(suffix.len()) else {
        return false;
    };
    name[start..].eq_ignore_ascii_case(suffix) && (start == 0 || name[start - 1] == b'.')
}

/// Whether a request whose `Host` is `own` may carry `Origin: origin`: the same host and port
/// (over `http` or `https`, as a TLS proxy in front serves it), or one of `allowed` (as
/// [`parse_origin`] normalizes them).
pub(crate) fn origin_allowed(origin: &str, own: &str, allowed: &[String]) -> bool {
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    if authority.is_some_and(|authority| !own.is_empty() && authority.eq_ignore_ascii_case(own)) {
        return true;
    }
    allowed
        .iter()
        .any(|entry| entry.eq_ignore_ascii_case(origin))
}

/// An `allowed_hosts` entry, normalized (lower case, no trailing dot), or why it is not a
/// host name.
pub(crate) fn parse_host(entry: &str) -> Result<String, String> {
    let name = entry
        .strip_suffix('.')
        .unwrap_or(entry)
        .to_ascii_lowercase();
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(
            "expected a host name without scheme, port or wildcard, e.g. wharf.internal \
             (IP addresses and localhost are always allowed)"
                .to_owned(),
        );
    }
    Ok(name)
}

/// An `allowed_origins` entry normalized as browsers send `Origin` (lower case, no default
/// port, no trailing slash), or why it is not an origin.
pub(crate) fn parse_origin(entry: &str) -> Result<String, String> {
    let expected = "expected an origin: http:// or https://, a host, an optional port, \
                    no path, e.g. https://app.example:3000";
    let lower = entry
        .strip_suffix('/')
        .unwrap_or(entry)
        .to_ascii_lowercase();
    let (scheme, authority) = lower.split_once("://").ok_or(expected)?;
    let default_port = match scheme {
        "http" => ":80",
        "https" => ":443",
        _ => return Err(expected.to_owned()),
    };
    let name = host_name(authority).ok_or(expected)?;
    let is_ip = name.parse::<Ipv4Addr>().is_ok()
        || name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .is_some_and(|n| n.parse::<Ipv6Addr>().is_ok());
    if name.is_empty() || (!is_ip && parse_host(name).is_err()) || authority.contains('/') {
        return Err(expected.to_owned());
    }
    let port = &authority[name.len()..];
    let authority = if port == default_port {
        name
    } else {
        authority
    };
    Ok(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_ip_literals_are_allowed_hosts_and_other_names_are_not() {
        let none: &[String] = &[];
        for host in [
            "127.0.0.1:8080",
            "127.9.9.9",
            "[::1]:8080",
            "[::1]",
            "localhost",
            "LOCALHOST:8080",
            "localhost.:8080",
            "app.localhost:8080",
            "10.0.0.5:8080",
        ] {
            assert!(host_allowed(host, none), "{host}");
        }
        for host in [
            "evil.example:8080",
            "evil.example",
            "localhost.evil.example:8080",
            "evillocalhost:8080",
            "127.0.0.1.nip.io:8080",
            "localhost:80x",
            "[::1",
            "",
        ] {
            assert!(!host_allowed(host, none), "{host}");
        }
        let named = vec!["wharf.internal".to_owned()];
        assert!(host_allowed("Wharf.Internal:8080", &named));
        assert!(host_allowed("wharf.internal.", &named));
        assert!(!host_allowed("x.wharf.internal", &named));
    }

    #[test]
    fn same_origin_means_the_host_header_and_other_origins_must_be_listed() {
        let none: &[String] = &[];
        assert!(origin_allowed(
            "http://127.0.0.1:8080",
            "127.0.0.1:8080",
            none
        ));
        assert!(origin_allowed(
            "https://wharf.example",
            "wharf.example",
            none
        ));
        assert!(!origin_allowed(
            "http://127.0.0.1:8081",
            "127.0.0.1:8080",
            none
        ));
        assert!(!origin_allowed("null", "127.0.0.1:8080", none));
        assert!(!origin_allowed("http://evil.example", "", none));
        let listed = vec![parse_origin("HTTPS://App.Example:443/").expect("valid")];
        assert_eq!(listed[0], "https://app.example");
        assert!(origin_allowed(
            "https://app.example",
            "127.0.0.1:8080",
            &listed
        ));
        assert!(!origin_allowed(
            "http://app.example",
            "127.0.0.1:8080",
            &listed
        ));
    }

    #[test]
    fn bad_entries_are_refused() {
        for entry in ["*", "http://x", "x:80", "*.example", "a..b", ""] {
            assert!(parse_host(entry).is_err(), "{entry}");
        }
        for entry in [
            "null",
            "*",
            "app.example",
            "ftp://x",
            "https://x/path",
            "http://",
        ] {
            assert!(parse_origin(entry).is_err(), "{entry}");
        }
        assert_eq!(
            parse_origin("http://[::1]:3000").as_deref(),
            Ok("http://[::1]:3000")
        );
        assert_eq!(parse_origin("http://x:80").as_deref(), Ok("http://x"));
        assert_eq!(
            parse_origin("http://x:8080").as_deref(),
            Ok("http://x:8080")
        );
    }
}
