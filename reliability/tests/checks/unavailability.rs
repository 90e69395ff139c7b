use wharf_reliability::checks::unavailability::WindowSource;
use wharf_reliability::event::{Event, Unavailable};

use crate::support::{clean, report};

#[test]
fn windows_are_derived_from_produce_outcomes_when_none_were_measured() {
    let unavailability = report(clean()).findings.unavailability;
    assert_eq!(unavailability.source, WindowSource::Derived);
    assert_eq!(
        unavailability.windows, 2,
        "from p1-1's timeout and from p1-2's refusal"
    );
    assert_eq!((unavailability.max_ms, unavailability.p50_ms), (110, 25));
}

#[test]
fn measured_windows_replace_derived_ones() {
    let mut events = clean();
    for (from_ms, to_ms) in [(500, 2500), (3000, 3100), (4000, 4300)] {
        events.push(Event::Unavailable(Unavailable { from_ms, to_ms }));
    }
    let unavailability = report(events).findings.unavailability;
    assert_eq!(unavailability.source, WindowSource::Measured);
    assert_eq!(
        (
            unavailability.windows,
            unavailability.max_ms,
            unavailability.p50_ms
        ),
        (3, 2000, 300)
    );
}

#[test]
fn a_window_still_open_at_the_end_closes_at_the_last_completion() {
    let mut events = clean();
    events.push(crate::support::produce(
        2,
        "p2-0",
        None,
        None,
        (5000, 9000),
        wharf_reliability::event::Outcome::Info,
    ));
    let unavailability = report(events).findings.unavailability;
    assert_eq!(unavailability.max_ms, 4000);
}
