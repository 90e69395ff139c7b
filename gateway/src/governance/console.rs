//! The web console's files, built into the binary: the page, its script and style, and the
//! vendored uPlot (MIT, `gateway/ui/vendor/uPlot.LICENSE`). No build step: what is in
//! `gateway/ui/` is what the browser gets. [`routes::console`](crate::routes::console) serves
//! them with the headers of [`HEADERS`].

use std::sync::LazyLock;

/// One file of the console.
#[derive(Debug)]
pub(crate) struct Asset {
    /// Its name under `/ui/`.
    pub name: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
}

/// The page served at `/ui`.
pub(crate) const INDEX: Asset = Asset {
    name: "index.html",
    content_type: "text/html; charset=utf-8",
    body: include_bytes!("../../ui/index.html"),
};

/// Every file served under `/ui/{asset}`.
pub(crate) const ASSETS: &[Asset] = &[
    INDEX,
    Asset {
        name: "console.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../ui/console.js"),
    },
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../ui/console.css"),
    },
    Asset {
        name: "uPlot.iife.min.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_bytes!("../../ui/vendor/uPlot.iife.min.js"),
    },
    Asset {
        name: "uPlot.min.css",
        content_type: "text/css; charset=utf-8",
        body: include_bytes!("../../ui/vendor/uPlot.min.css"),
    },
];

/// The console's content security policy: scripts, styles and API calls from this origin
/// only, no inline script or style element, no plug-ins, no framing, no `<base>`, no form
/// posted anywhere (the console's forms are handled by its script).
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Caching: a browser may keep a file but must ask again (answered 304 by `ETag`), so a new
/// binary's console is seen on the next load; the files are not named by their content, so
/// a `max-age` would mix an old script with a new page.
pub(crate) const CACHE_CONTROL: &str = "no-cache";

/// The headers of every console file besides its type, caching and `ETag`.
pub(crate) const HEADERS: [(&str, &str); 4] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
];

/// The file named `name`, if the console has it.
pub(crate) fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|asset| asset.name == name)
}

/// The `ETag` of the console's files: one for the whole set (they change together, with the
/// binary), a hash of their bytes.
pub(crate) fn etag() -> &'static str {
    static ETAG: LazyLock<String> = LazyLock::new(|| {
        // FNV-1a, 64 bits: no cryptographic strength needed, only change detection.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for asset in ASSETS {
            for byte in asset.name.bytes().chain(asset.body.iter().copied()) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        format!("\"{hash:016x}\"")
    });
    &ETAG
}

/// Whether an `If-None-Match` header value names `etag` (or is `*`).
pub(crate) fn matches_etag(if_none_match: &str, etag: &str) -> bool {
    if_none_match
        .split(',')
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == "*" || tag == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_is_found_by_its_name_and_nothing_else_is() {
        for file in ASSETS {
            assert!(asset(file.name).is_some_and(|found| found.body == file.body));
            assert!(!file.body.is_empty(), "{}", file.name);
        }
        for name in [
            "",
            "..",
            "../Cargo.toml",
            "vendor/uPlot.LICENSE",
            "INDEX.HTML",
        ] {
            assert!(asset(name).is_none(), "{name}");
        }
    }

    #[test]
    fn if_none_match_lists_are_understood() {
        let etag = etag();
        assert!(matches_etag(etag, etag));
        assert!(matches_etag(&format!("\"x\", W/{etag}"), etag));
        assert!(matches_etag("*", etag));
        assert!(!matches_etag("\"other\"", etag));
    }
}
