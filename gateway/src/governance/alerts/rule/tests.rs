use super::*;
use crate::http::extract::parse_json;

fn open() -> WebhookPolicy {
    WebhookPolicy::allow_any()
}

fn rule(kind: AlertKind) -> AlertRule {
    let (topic, subscription) = kind.scope();
    AlertRule {
        name: "orders-backlog".to_owned(),
        kind,
        topic: (topic != Need::Forbidden).then(|| "orders".to_owned()),
        subscription: (subscription != Need::Forbidden).then(|| "billing".to_owned()),
        threshold: kind.has_threshold().then_some(0.5),
        for_ms: kind.for_ms_range().0,
        webhook_url: "https://hooks.example.com/wharf".to_owned(),
        secret: None,
    }
}

const KINDS: [AlertKind; 7] = [
    AlertKind::Backlog,
    AlertKind::OldestUnackedAge,
    AlertKind::ConsumerOffline,
    AlertKind::DeadLetters,
    AlertKind::ProduceErrors,
    AlertKind::Disk,
    AlertKind::Probe,
];

#[test]
fn a_rule_of_every_kind_with_its_fields_is_valid_and_keeps_its_values() {
    for kind in KINDS {
        let valid = rule(kind).validate(&open()).expect("valid");
        assert_eq!(valid.kind(), kind);
        assert_eq!(valid.name(), "orders-backlog");
        assert_eq!(valid.webhook_url().host_str(), Some("hooks.example.com"));
        let expected = if kind.has_threshold() { 0.5 } else { 0.0 };
        assert_eq!(valid.threshold(), expected, "{kind}");
    }
}

#[test]
fn a_body_with_an_unknown_field_is_refused_like_every_request_body() {
    let body = br#"{"name":"a","kind":"disk","threshold":0.9,"webhook_url":"http://h/","extra":1}"#;
    let refused = parse_json::<AlertRule>(body).expect_err("unknown field");
    assert!(refused.to_string().contains("extra"), "{refused}");
    let body =
        br#"{"name":"a","kind":"disk","threshold":0.9,"for_ms":60000.0,"webhook_url":"http://h/"}"#;
    let parsed = parse_json::<AlertRule>(body).expect("an integral float is an integer");
    assert_eq!((parsed.for_ms, parsed.topic), (60_000, None));
    let unknown_kind = br#"{"name":"a","kind":"cpu","threshold":1,"webhook_url":"http://h/"}"#;
    assert!(parse_json::<AlertRule>(unknown_kind).is_err());
}

#[test]
fn a_rule_survives_a_round_trip_through_json() {
    for kind in KINDS {
        let original = rule(kind);
        let json = serde_json::to_vec(&original).expect("serializes");
        assert_eq!(parse_json::<AlertRule>(&json).expect("parses"), original);
    }
}

#[test]
fn names_follow_the_topic_name_rules() {
    let mut named = rule(AlertKind::Backlog);
    named.name = "a".repeat(200);
    assert!(named.validate(&open()).is_ok(), "limit");
    for bad in [
        String::new(),
        "a".repeat(201),
        "__probe".to_owned(),
        "a/b".to_owned(),
    ] {
        named.name = bad.clone();
        let error = named.validate(&open()).expect_err("refused");
        assert!(
            matches!(error, AlertError::InvalidName { field: "name", .. }),
            "{bad:?}: {error:?}"
        );
    }
    let mut bad_topic = rule(AlertKind::Backlog);
    bad_topic.topic = Some("a b".to_owned());
    assert_eq!(
        bad_topic.validate(&open()).expect_err("bad").field(),
        Some("topic")
    );
}

#[test]
fn each_kind_requires_and_refuses_topic_and_subscription_as_documented() {
    let missing = |kind, field| AlertError::MissingField { field, kind };
    let unexpected = |kind, field| AlertError::UnexpectedField { field, kind };
    let mut backlog = rule(AlertKind::Backlog);
    backlog.subscription = None;
    assert_eq!(
        backlog.validate(&open()),
        Err(missing(AlertKind::Backlog, "subscription"))
    );
    backlog.topic = None;
    assert_eq!(
        backlog.validate(&open()),
        Err(missing(AlertKind::Backlog, "topic"))
    );
    let mut dead = rule(AlertKind::DeadLetters);
    dead.subscription = None;
    assert!(
        dead.validate(&open()).is_ok(),
        "a whole topic's dead letters"
    );
    let mut errors = rule(AlertKind::ProduceErrors);
    errors.topic = None;
    assert!(
        errors.validate(&open()).is_ok(),
        "the node's produce errors"
    );
    errors.subscription = Some("billing".to_owned());
    assert_eq!(
        errors.validate(&open()),
        Err(unexpected(AlertKind::ProduceErrors, "subscription"))
    );
    let mut disk = rule(AlertKind::Disk);
    disk.topic = Some("orders".to_owned());
    assert_eq!(
        disk.validate(&open()),
        Err(unexpected(AlertKind::Disk, "topic"))
    );
    let mut probe = rule(AlertKind::Probe);
    probe.subscription = Some("billing".to_owned());
    assert_eq!(
        probe.validate(&open()),
        Err(unexpected(AlertKind::Probe, "subscription"))
    );
    probe.topic = Some("orders".to_owned());
    assert_eq!(
        probe.validate(&open()),
        Err(unexpected(AlertKind::Probe, "topic"))
    );
    let mut probe = rule(AlertKind::Probe);
    probe.threshold = Some(1.0);
    assert_eq!(
        probe.validate(&open()),
        Err(unexpected(AlertKind::Probe, "threshold"))
    );
}

#[test]
fn threshold_is_required_finite_and_within_its_kinds_range() {
    let mut backlog = rule(AlertKind::Backlog);
    backlog.threshold = None;
    assert_eq!(
        backlog.validate(&open()).expect_err("absent").field(),
        Some("threshold")
    );
    for bad in [f64::NAN, f64::INFINITY] {
        backlog.threshold = Some(bad);
        assert!(matches!(
            backlog.validate(&open()),
            Err(AlertError::ThresholdNotFinite { .. })
        ));
    }
    let cases = [
        (AlertKind::Backlog, MAX_COUNT_THRESHOLD),
        (AlertKind::DeadLetters, MAX_COUNT_THRESHOLD),
        (AlertKind::ProduceErrors, MAX_COUNT_THRESHOLD),
        (AlertKind::OldestUnackedAge, MAX_AGE_THRESHOLD_MS),
        (AlertKind::Disk, MAX_DISK_THRESHOLD),
    ];
    for (kind, max) in cases {
        let mut at = rule(kind);
        for fine in [0.0, max] {
            at.threshold = Some(fine);
            assert!(at.validate(&open()).is_ok(), "{kind} {fine}");
        }
        for bad in [-f64::MIN_POSITIVE, max * 1.0001] {
            at.threshold = Some(bad);
            assert!(
                matches!(
                    at.validate(&open()),
                    Err(AlertError::ThresholdOutOfRange { .. })
                ),
                "{kind} {bad}"
            );
        }
    }
    let mut offline = rule(AlertKind::ConsumerOffline);
    offline.threshold = Some(0.0);
    assert_eq!(
        offline.validate(&open()),
        Err(AlertError::UnexpectedField {
            field: "threshold",
            kind: AlertKind::ConsumerOffline
        })
    );
}

#[test]
fn for_ms_is_accepted_at_its_bounds_and_refused_one_past_them() {
    let mut backlog = rule(AlertKind::Backlog);
    for fine in [0, MAX_FOR_MS] {
        backlog.for_ms = fine;
        assert!(backlog.validate(&open()).is_ok());
    }
    backlog.for_ms = MAX_FOR_MS + 1;
    assert_eq!(
        backlog.validate(&open()).expect_err("long").field(),
        Some("for_ms")
    );
    let mut offline = rule(AlertKind::ConsumerOffline);
    offline.for_ms = MIN_CONSUMER_OFFLINE_FOR_MS;
    assert!(offline.validate(&open()).is_ok());
    offline.for_ms = MIN_CONSUMER_OFFLINE_FOR_MS - 1;
    assert!(matches!(
        offline.validate(&open()),
        Err(AlertError::ForMsOutOfRange {
            min: MIN_CONSUMER_OFFLINE_FOR_MS,
            ..
        })
    ));
}

#[test]
fn the_webhook_url_is_checked_against_length_and_policy() {
    let mut hook = rule(AlertKind::Disk);
    let base = "https://h.example/";
    hook.webhook_url = format!("{base}{}", "a".repeat(MAX_WEBHOOK_URL_BYTES - base.len()));
    assert!(hook.validate(&open()).is_ok(), "limit");
    hook.webhook_url.push('a');
    assert!(matches!(
        hook.validate(&open()),
        Err(AlertError::WebhookUrlTooLong { .. })
    ));
    hook.webhook_url = "ftp://h.example/".to_owned();
    assert!(matches!(
        hook.validate(&open()),
        Err(AlertError::WebhookScheme { .. })
    ));
    let strict = WebhookPolicy::new(["hooks.example.com"]).expect("valid list");
    hook.webhook_url = "https://other.example.com/".to_owned();
    assert!(matches!(
        hook.validate(&strict),
        Err(AlertError::WebhookHostNotAllowed { .. })
    ));
}
