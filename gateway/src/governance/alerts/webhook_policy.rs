//! Where webhooks may go. A webhook URL is an outbound call the server makes on a client's
//! behalf (server-side request forgery): [`WebhookPolicy`] allows only `http` and `https`
//! URLs with a host and without user name or password, and, when the operator gives an
//! allow-list of [`HostPattern`]s, only hosts (and ports) that match one.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use reqwest::Url;

use super::error::AlertError;
use super::rule::MAX_WEBHOOK_URL_BYTES;

/// The operator's rule for webhook targets.
///
/// With an empty allow-list every `http(s)` target is allowed, internal addresses included:
/// a single node on a laptop or in a private network posts to receivers on the same network,
/// and refusing them would make alerts unusable out of the box. Operators of a shared or
/// exposed server list the receivers they trust. The check is on the URL as written: a
/// listed name that resolves to an internal address is the operator's choice, and the sender
/// must not follow redirects (a redirect would leave the list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookPolicy {
    allowed: Vec<HostPattern>,
}

impl WebhookPolicy {
    /// No allow-list: any `http(s)` target.
    pub fn allow_any() -> Self {
        WebhookPolicy::default()
    }

    /// Only targets matching one of `patterns` (see [`HostPattern`]); an empty list allows
    /// any `http(s)` target.
    pub fn new<I, S>(patterns: I) -> Result<Self, AlertError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed = patterns
            .into_iter()
            .map(|pattern| pattern.as_ref().parse())
            .collect::<Result<Vec<HostPattern>, AlertError>>()?;
        Ok(WebhookPolicy { allowed })
    }

    /// The allow-list (empty: any target).
    pub fn patterns(&self) -> &[HostPattern] {
        &self.allowed
    }

    /// Parses `text` (at most [`MAX_WEBHOOK_URL_BYTES`]) and checks it with
    /// [`WebhookPolicy::check`].
    pub fn check_text(&self, text: &str) -> Result<Url, AlertError> {
        if text.len() > MAX_WEBHOOK_URL_BYTES {
            return Err(AlertError::WebhookUrlTooLong {
                len: text.len(),
                max: MAX_WEBHOOK_URL_BYTES,
            });
        }
        let url = Url::parse(text).map_err(|error| AlertError::WebhookUrlUnparsable {
            reason: error.to_string(),
        })?;
        self.check(&url)?;
        Ok(url)
    }

    /// Whether the server may post to `url`.
    pub fn check(&self, url: &Url) -> Result<(), AlertError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(AlertError::WebhookScheme {
                scheme: url.scheme().to_owned(),
            });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(AlertError::WebhookUserinfo);
        }
        let Some(host) = url.host_str().filter(|host| !host.is_empty()) else {
            return Err(AlertError::WebhookNoHost);
        };
        if self.allowed.is_empty() {
            return Ok(());
        }
        // http and https always have a known default port.
        let port = url.port_or_known_default().unwrap_or_default();
        if self
            .allowed
            .iter()
            .any(|pattern| pattern.matches(host, port))
        {
            return Ok(());
        }
        Err(AlertError::WebhookHostNotAllowed {
            host: host.to_owned(),
            port,
        })
    }
}

/// One entry of the allow-list: `hooks.example.com` (that host), `*.example.com` (any
/// name under `example.com`, at any depth, but not `example.com` itself), an IP address
/// (`10.0.0.7`, `[fd00::7]`), each optionally with `:port` (without it, any port). Hosts
/// are compared as URLs write them: lowercase, IDNs in punycode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    Exact(String),
    /// The suffix with its leading dot: `.example.com`.
    Subdomains(String),
}

impl HostPattern {
    /// Whether a URL's `host` (as [`Url::host_str`] gives it) and `port` match.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host_matches = match &self.host {
            HostMatch::Exact(exact) => host == exact,
            HostMatch::Subdomains(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
        };
        host_matches && self.port.is_none_or(|wanted| wanted == port)
    }
}

impl FromStr for HostPattern {
    type Err = AlertError;

    fn from_str(text: &str) -> Result<Self, AlertError> {
        let bad = |reason| AlertError::InvalidHostPattern {
            pattern: text.to_owned(),
            reason,
        };
        let (wildcard, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (host, port) = split_port(rest).ok_or_else(|| bad("expected host or host:port"))?;
        let port = match port {
            None => None,
            Some(port) => Some(
                port.parse::<u16>()
                    .ok()
                    .filter(|port| *port != 0)
                    .ok_or_else(|| bad("the port must be 1 to 65535"))?,
            ),
        };
        let host = normalized_host(host).ok_or_else(|| bad("not a host name or IP address"))?;
        let is_ip = host.starts_with('[') || host.parse::<Ipv4Addr>().is_ok();
        let host = match (wildcard, is_ip) {
            (false, _) => HostMatch::Exact(host),
            (true, false) => HostMatch::Subdomains(format!(".{host}")),
            (true, true) => return Err(bad("a wildcard needs a domain name, not an IP address")),
        };
        Ok(HostPattern { host, port })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Exact(host) => f.write_str(host)?,
            HostMatch::Subdomains(suffix) => write!(f, "*{suffix}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// `host[:port]` or `[v6][:port]` into host and port text.
fn split_port(text: &str) -> Option<(&str, Option<&str>)> {
    if let Some(inside) = text.strip_prefix('[') {
        let end = inside.find(']')? + 2;
        let (host, tail) = text.split_at(end);
        return match tail {
            "" => Some((host, None)),
            tail => Some((host, Some(tail.strip_prefix(':')?))),
        };
    }
    Some(match text.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    })
}

/// The host as a URL's `host_str` writes it, if `host` is nothing but a host: the URL
/// parser lowercases and punycodes names and normalizes addresses, and a pattern smuggling
/// a user, path or query (`u@h`, `h/x`) is refused because it would not read back as written.
fn normalized_host(host: &str) -> Option<String> {
    if host.is_empty() {
        return None;
    }
    let url = Url::parse(&format!("http://{host}/")).ok()?;
    let normalized = url.host_str()?.to_owned();
    (url.as_str() == format!("http://{normalized}/")).then_some(normalized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).expect("a URL")
    }

    fn policy(patterns: &[&str]) -> WebhookPolicy {
        WebhookPolicy::new(patterns).expect("valid patterns")
    }

    #[test]
    fn only_http_and_https_without_userinfo_are_allowed_even_with_no_list() {
        let any = WebhookPolicy::allow_any();
        assert!(
            any.check(&url("http://127.0.0.1:9000/hook")).is_ok(),
            "documented: any target"
        );
        assert!(any.check(&url("https://hooks.example.com/")).is_ok());
        for scheme in [
            "ftp://h/",
            "file:///etc/passwd",
            "gopher://h/",
            "data:text/plain,x",
        ] {
            assert!(
                matches!(
                    any.check(&url(scheme)),
                    Err(AlertError::WebhookScheme { .. })
                ),
                "{scheme}"
            );
        }
        for userinfo in ["http://u@h/", "http://u:p@h/", "https://:p@h/"] {
            assert_eq!(
                any.check(&url(userinfo)),
                Err(AlertError::WebhookUserinfo),
                "{userinfo}"
            );
        }
    }

    #[test]
    fn a_url_without_a_host_or_unparsable_is_refused_as_text() {
        let any = WebhookPolicy::allow_any();
        for bad in [
            "http://",
            "http://:80/",
            "hooks.example.com/x",
            "",
            "https://exa mple.com/",
        ] {
            assert!(
                matches!(
                    any.check_text(bad),
                    Err(AlertError::WebhookUrlUnparsable { .. })
                ),
                "{bad:?}"
            );
        }
        let parsed = any
            .check_text("HTTPS://Hooks.Example.COM/a")
            .expect("allowed");
        assert_eq!(parsed.host_str(), Some("hooks.example.com"));
    }

    #[test]
    fn an_exact_pattern_matches_its_host_only_and_its_port_when_given() {
        let list = policy(&["hooks.example.com", "alerts.example.com:8443"]);
        assert!(list.check(&url("https://hooks.example.com/x")).is_ok());
        assert!(
            list.check(&url("http://hooks.example.com:9999/x")).is_ok(),
            "any port"
        );
        assert!(list.check(&url("https://alerts.example.com:8443/")).is_ok());
        let refused = list.check(&url("https://alerts.example.com/"));
        assert_eq!(
            refused,
            Err(AlertError::WebhookHostNotAllowed {
                host: "alerts.example.com".to_owned(),
                port: 443
            })
        );
        for other in [
            "https://evil.com/",
            "https://hooks.example.com.evil.com/",
            "https://xhooks.example.com/",
            "https://a.hooks.example.com/",
            "http://127.0.0.1/",
        ] {
            assert!(list.check(&url(other)).is_err(), "{other}");
        }
    }

    #[test]
    fn a_default_port_in_a_pattern_matches_a_url_that_leaves_it_out() {
        let list = policy(&["hooks.example.com:443"]);
        assert!(list.check(&url("https://hooks.example.com/")).is_ok());
        assert!(
            list.check(&url("http://hooks.example.com/")).is_err(),
            "port 80"
        );
    }

    #[test]
    fn a_wildcard_matches_names_under_its_domain_at_any_depth_but_not_the_domain() {
        let list = policy(&["*.example.com"]);
        assert!(list.check(&url("https://a.example.com/")).is_ok());
        assert!(list.check(&url("https://a.b.example.com:1234/")).is_ok());
        for other in [
            "https://example.com/",
            "https://badexample.com/",
            "https://a.example.com.evil.net/",
        ] {
            assert!(list.check(&url(other)).is_err(), "{other}");
        }
    }

    #[test]
    fn ip_patterns_match_as_urls_write_addresses() {
        let list = policy(&["10.0.0.7:9000", "[FD00::7]"]);
        assert!(list.check(&url("http://10.0.0.7:9000/")).is_ok());
        assert!(list.check(&url("http://10.0.0.7:9001/")).is_err());
        assert!(list.check(&url("http://[fd00:0::7]:5/")).is_ok());
        assert!(list.check(&url("http://[fd00::8]/")).is_err());
    }

    #[test]
    fn patterns_that_are_not_hosts_are_refused() {
        for bad in [
            "",
            "*.",
            "h:0",
            "h:65536",
            "h:x",
            "u@h",
            "h/path",
            "h?q",
            "::1",
            "[::1",
            "[::1]x",
            "*.10.0.0.7",
            "*.[::1]",
            "a b",
        ] {
            assert!(
                matches!(
                    bad.parse::<HostPattern>(),
                    Err(AlertError::InvalidHostPattern { .. })
                ),
                "{bad:?} was accepted"
            );
        }
    }

    #[test]
    fn a_pattern_reads_back_as_written_once_normalized() {
        for (given, shown) in [
            ("Hooks.Example.com", "hooks.example.com"),
            ("*.example.com:8443", "*.example.com:8443"),
            ("[fd00:0::7]:80", "[fd00::7]:80"),
        ] {
            let pattern: HostPattern = given.parse().expect("valid");
            assert_eq!(pattern.to_string(), shown);
        }
    }
}
