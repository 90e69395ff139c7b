//! Property tests: every random clean history is valid; the same history with one random anomaly
//! injected is invalid, with the anomaly's counter raised.

mod model;

use proptest::prelude::*;
use wharf_reliability::event::{Deliver, Event, NodeId, Outcome};
use wharf_reliability::{History, Report, Verdict, check};

use model::{NODES, plan};

fn report(events: Vec<Event>) -> Report {
    check(&History::from_events(events).expect("a generated history has one header"))
}

/// One anomaly to inject into a clean history; indices are taken modulo what is there.
#[derive(Debug, Clone)]
enum Anomaly {
    /// Drop an acknowledged value from every node's drain.
    DropAcked(usize),
    /// Swap the values at offsets 0 and 1 of partition 0 on one node.
    SwapOnNode(usize),
    /// Deliver an acknowledged message again after its ack was confirmed.
    DeliverAfterAck(usize),
    /// Deliver a value nobody produced.
    DeliverGhost,
    /// Swap the first two writes of key 0 in every log and in their replies.
    ReorderKey,
}

fn anomaly() -> impl Strategy<Value = Anomaly> {
    prop_oneof![
        any::<usize>().prop_map(Anomaly::DropAcked),
        (0..NODES.len()).prop_map(Anomaly::SwapOnNode),
        any::<usize>().prop_map(Anomaly::DeliverAfterAck),
        Just(Anomaly::DeliverGhost),
        Just(Anomaly::ReorderKey),
    ]
}

fn inject(mut events: Vec<Event>, anomaly: &Anomaly) -> Vec<Event> {
    match *anomaly {
        Anomaly::DropAcked(index) => {
            let acked = nth_acked(&events, index);
            events.retain(|e| !matches!(e, Event::Drain(d) if d.value == acked));
            recount_drained(&mut events);
        }
        Anomaly::SwapOnNode(node) => swap_first_two(&mut events, Some(NODES[node])),
        Anomaly::DeliverAfterAck(index) => {
            let late = late_delivery(&events, index);
            events.push(Event::Deliver(late));
        }
        Anomaly::DeliverGhost => events.push(Event::Deliver(delivery("ghost", u64::MAX))),
        Anomaly::ReorderKey => {
            swap_first_two(&mut events, None);
            for event in &mut events {
                if let Event::Produce(produce) = event
                    && produce.partition == Some(0)
                    && produce.offset < Some(2)
                {
                    produce.offset = produce.offset.map(|offset| 1 - offset);
                }
            }
        }
    }
    events
}

fn nth_acked(events: &[Event], index: usize) -> String {
    let acked: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Produce(p) if p.outcome == Outcome::Ok => Some(p.value.as_str()),
            _ => None,
        })
        .collect();
    acked[index % acked.len()].to_owned()
}

/// Swaps the values at offsets 0 and 1 of partition 0 on `node` (on every node when `None`).
fn swap_first_two(events: &mut [Event], node: Option<NodeId>) {
    for event in events {
        if let Event::Drain(drain) = event
            && drain.partition == 0
            && drain.offset < 2
            && node.is_none_or(|node| node == drain.node)
        {
            drain.value = match drain.offset {
                0 => "p0-1".to_owned(),
                _ => "p0-0".to_owned(),
            };
        }
    }
}

fn recount_drained(events: &mut [Event]) {
    let drains: Vec<(NodeId, u32)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Drain(d) => Some((d.node, d.partition)),
            _ => None,
        })
        .collect();
    for event in events {
        if let Event::Drained(drained) = event {
            let at = (drained.node, drained.partition);
            drained.records = drains.iter().filter(|&&d| d == at).count() as u64;
        }
    }
}

fn late_delivery(events: &[Event], index: usize) -> Deliver {
    let confirmed: Vec<(&str, u64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Ack(a) if a.outcome == Outcome::Ok => Some((a.value.as_str(), a.complete_ms)),
            _ => None,
        })
        .collect();
    let (value, complete_ms) = confirmed[index % confirmed.len()];
    delivery(value, complete_ms + 1)
}

fn delivery(value: &str, received_ms: u64) -> Deliver {
    Deliver {
        process: 11,
        subscription: "s".to_owned(),
        value: value.to_owned(),
        partition: 0,
        offset: 0,
        attempt: 9,
        received_ms,
        receive_invoke_ms: None,
        node: 3,
    }
}

/// The counter the anomaly raises, and the value it must reach: a swap on one node diverges at
/// both offsets swapped.
fn raised_counter(report: &Report, anomaly: &Anomaly) -> (u64, u64) {
    let findings = &report.findings;
    match anomaly {
        Anomaly::DropAcked(_) => (findings.queue.lost.count, 1),
        Anomaly::SwapOnNode(_) => (findings.divergence.count, 2),
        Anomaly::DeliverAfterAck(_) => (findings.delivered_after_ack.late.count, 1),
        Anomaly::DeliverGhost => (findings.queue.unexpected.count, 1),
        Anomaly::ReorderKey => (findings.order.count, 1),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_clean_history_is_valid_and_counted_as_planned(plan in plan()) {
        let report = report(plan.history());
        let queue = &report.findings.queue;
        let expected = plan.expected();
        prop_assert_eq!(report.verdict, Verdict::Valid, "{:?}", report.reasons);
        prop_assert_eq!(queue.lost.count + queue.per_node_lost.count, 0);
        prop_assert_eq!(queue.acknowledged, expected.acked);
        prop_assert_eq!(queue.unknown, expected.unknown);
        prop_assert_eq!(queue.recovered.count, expected.recovered);
        prop_assert_eq!(queue.failed, expected.failed);
        prop_assert_eq!(queue.duplicated.count + queue.unexpected.count, 0);
    }

    #[test]
    fn every_clean_history_with_one_anomaly_injected_is_invalid(
        plan in plan(),
        anomaly in anomaly(),
    ) {
        let report = report(inject(plan.history(), &anomaly));
        prop_assert_eq!(report.verdict, Verdict::Invalid);
        let (found, expected) = raised_counter(&report, &anomaly);
        prop_assert_eq!(found, expected, "{:?}", report.reasons);
    }
}
