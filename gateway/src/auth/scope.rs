//! Scope grants: a token's `scope` claim is space-separated `action:topic-glob` grants
//! (`produce:orders.* consume:orders.*`, `admin:*`). A glob's `*` matches any run of
//! characters (dots included) and `?` exactly one; everything else matches itself.

use std::fmt;

/// What a grant allows on the topics its glob matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Publish messages, and cancel delayed ones.
    Produce,
    /// Receive, ack, nack, extend, seek, stream, read by offset, look messages up.
    Consume,
    /// Create, change and delete topics and subscriptions; redrive dead letters. Admin on a
    /// topic implies every other action on it.
    Admin,
}

impl Action {
    /// The action's name in a grant.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Produce => "produce",
            Action::Consume => "consume",
            Action::Admin => "admin",
        }
    }

    fn parse(text: &str) -> Option<Action> {
        match text {
            "produce" => Some(Action::Produce),
            "consume" => Some(Action::Consume),
            "admin" => Some(Action::Admin),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `action:glob` grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The action granted.
    pub action: Action,
    /// The topic glob it applies to.
    pub glob: String,
}

/// A principal's grants. Unknown or malformed grants are ignored (they grant nothing), so a
/// newer token works on an older server without widening anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    grants: Vec<Grant>,
}

/// Most grants read from one `scope` claim; the rest are ignored, so a huge claim cannot
/// make every authorization check slow.
pub(crate) const MAX_GRANTS: usize = 64;

impl Grants {
    /// Parses a `scope` claim.
    pub fn parse(scope: &str) -> Grants {
        let grants = scope
            .split_ascii_whitespace()
            .filter_map(|grant| {
                let (action, glob) = grant.split_once(':')?;
                let action = Action::parse(action)?;
                (!glob.is_empty()).then(|| Grant {
                    action,
                    glob: glob.to_owned(),
                })
            })
            .take(MAX_GRANTS)
            .collect();
        Grants { grants }
    }

    /// Everything on every topic: what an anonymous client of an unauthenticated server has.
    pub fn all() -> Grants {
        Grants {
            grants: vec![Grant {
                action: Action::Admin,
                glob: "*".to_owned(),
            }],
        }
    }

    /// Whether `action` is allowed on `topic` (admin on the topic allows everything).
    pub fn allows(&self, action: Action, topic: &str) -> bool {
        self.grants.iter().any(|grant| {
            (grant.action == action || grant.action == Action::Admin)
                && glob_matches(&grant.glob, topic)
        })
    }

    /// Whether `action` is granted on every topic: a grant whose glob is only `*`s.
    pub fn allows_everywhere(&self, action: Action) -> bool {
        self.grants.iter().any(|grant| {
            (grant.action == action || grant.action == Action::Admin)
                && grant.glob.chars().all(|c| c == '*')
        })
    }

    /// Whether any grant at all matches `topic`.
    pub fn allows_any(&self, topic: &str) -> bool {
        self.grants
            .iter()
            .any(|grant| glob_matches(&grant.glob, topic))
    }

    /// The grants, in claim order.
    pub fn iter(&self) -> impl Iterator<Item = &Grant> {
        self.grants.iter()
    }
}

/// Glob match with `*` (any run, possibly empty) and `?` (one character), linear time.
pub(crate) fn glob_matches(glob: &str, text: &str) -> bool {
    let glob: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, t));
                g += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                g += 1;
                t += 1;
            }
            _ => match star {
                Some((star_g, star_t)) => {
                    g = star_g + 1;
                    t = star_t + 1;
                    star = Some((star_g, star_t + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_runs_single_characters_and_literals() {
        assert!(glob_matches("*", "anything.at.all"));
        assert!(glob_matches("orders.*", "orders.created"));
        assert!(glob_matches("orders.*", "orders.a.b"));
        assert!(!glob_matches("orders.*", "orders"));
        assert!(!glob_matches("orders.*", "ordersX"));
        assert!(glob_matches("orders", "orders"));
        assert!(!glob_matches("orders", "orders2"));
        assert!(glob_matches("o?ders", "orders"));
        assert!(glob_matches("*.dlq", "orders.billing.dlq"));
        assert!(!glob_matches("*.dlq", "orders.billing"));
        assert!(glob_matches("a*b*c", "aXbYc"));
        assert!(!glob_matches("a*b*c", "aXbY"));
    }

    #[test]
    fn admin_implies_every_action_and_unknown_grants_grant_nothing() {
        let grants = Grants::parse("produce:orders.* admin:billing superuser:* consume: :x");
        assert!(grants.allows(Action::Produce, "orders.new"));
        assert!(!grants.allows(Action::Consume, "orders.new"));
        assert!(grants.allows(Action::Consume, "billing"));
        assert!(grants.allows(Action::Admin, "billing"));
        assert!(!grants.allows(Action::Admin, "orders.new"));
        assert!(!grants.allows_any("other"));
        assert_eq!(grants.iter().count(), 2);
    }
}
