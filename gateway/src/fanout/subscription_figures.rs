//! A subscription's stats on any node of a cluster: a partition's lease table is live only
//! on its leader (`broker::live_tables`), and the schedule of a partition held elsewhere is
//! not on this node at all, so describing or listing subscriptions sums each partition's
//! figures as its leader has them. This node's own figures serve for the partitions it leads;
//! each other leader is asked once (a `GET` of the same route with the client's credentials,
//! `Wharf-Forwarded` and [`LED_FIGURES_HEADER`]), and answers with the figures of the
//! partitions it leads ([`LedFigures`]) instead of the usual body. A leader that cannot be
//! asked leaves this node's own figures for its partitions (those of a replica that follows
//! the log, or nothing for a partition held elsewhere). The oldest unacked age is the largest
//! of the partitions'. On a single node none of this runs.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use broker_core::broker::{FiguresOf, SubscriptionInfo, SubscriptionStats, TopicFigures};
use serde::{Deserialize, Serialize};

use crate::app::AppState;
use crate::fanout::ask_leader::ask_leader;
use crate::fanout::forward::FORWARDED_HEADER;
use crate::http::problem::ApiError;

/// Marks a forwarded `GET` of a subscription (or of the list) that asks for
/// [`LedFigures`]; honoured only with `Wharf-Forwarded` (only nodes send both).
pub(crate) const LED_FIGURES_HEADER: &str = "wharf-led-figures";

/// What a leader answers to [`LED_FIGURES_HEADER`]: the figures of the partitions it serves.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LedFigures {
    /// Delayed messages not yet due, per partition it serves.
    pub delayed: Vec<(u32, u64)>,
    /// Per subscription (by name, with its uid): its figures on the partitions it serves.
    pub subscriptions: Vec<LedSubscription>,
}

/// One subscription's figures in [`LedFigures`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LedSubscription {
    /// Its name.
    pub name: String,
    /// Its incarnation: figures of another incarnation of the same name are not summed.
    pub uid: u64,
    /// Per partition served there: its figures.
    pub partitions: Vec<(u32, SubscriptionStats)>,
}

/// What a describe or list answers in a cluster.
pub(crate) enum Gathered {
    /// A node asked for this node's [`LedFigures`].
    Led(LedFigures),
    /// The subscriptions, with every partition's figures from its leader.
    Infos(Vec<SubscriptionInfo>),
}

/// The subscriptions of `topic` (those of `of`) with their stats summed over the
/// partitions' leaders (see the module docs), or this node's [`LedFigures`] if another node
/// asked for them. Single nodes do not call this.
pub(crate) async fn gather(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
    of: FiguresOf<'_>,
) -> Result<Gathered, ApiError> {
    if let Some(figures) = led_asked(state, headers, topic, of).await? {
        return Ok(Gathered::Led(figures));
    }
    Ok(Gathered::Infos(summed(
        from_leaders(state, headers, topic, of).await?,
    )))
}

/// This node's [`LedFigures`] of `of` if another node of a cluster asked for them (a request
/// with `Wharf-Forwarded` and [`LED_FIGURES_HEADER`]), else `None`.
pub(crate) async fn led_asked(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
    of: FiguresOf<'_>,
) -> Result<Option<LedFigures>, ApiError> {
    let asked = headers.contains_key(FORWARDED_HEADER) && headers.contains_key(LED_FIGURES_HEADER);
    if state.cluster.is_none() || !asked {
        return Ok(None);
    }
    let figures = state.broker.subscription_figures(topic, of).await?;
    Ok(Some(led(&figures)))
}

/// The delayed messages of `topic` not yet due, summed over its partitions' leaders (in a
/// cluster, each node's schedule counter counts only what it scheduled or moved itself).
pub(crate) async fn delayed(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
) -> Result<u64, ApiError> {
    let figures = from_leaders(state, headers, topic, FiguresOf::Topic).await?;
    Ok(figures.delayed.iter().sum())
}

/// This node's per-partition figures of `topic`, those of the partitions another node leads
/// replaced with that leader's (a forwarded request, or one on a single node: this node's).
async fn from_leaders(
    state: &AppState,
    headers: &HeaderMap,
    topic: &str,
    of: FiguresOf<'_>,
) -> Result<TopicFigures, ApiError> {
    let mut figures = state.broker.subscription_figures(topic, of).await?;
    let Some(cluster) = &state.cluster else {
        return Ok(figures);
    };
    if headers.contains_key(FORWARDED_HEADER) {
        return Ok(figures);
    }
    let mut by_leader: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    for (partition, served) in (0u32..).zip(&figures.served) {
        match state.broker.partition_leader(topic, partition) {
            Some(leader) if !served && leader != cluster.node_id() => {
                by_leader.entry(leader).or_default().push(partition);
            }
            _ => {}
        }
    }
    let path = match of {
        FiguresOf::One(name) => format!("/v1/topics/{topic}/subscriptions/{name}"),
        FiguresOf::All => format!("/v1/topics/{topic}/subscriptions"),
        FiguresOf::Topic => format!("/v1/topics/{topic}"),
    };
    let marker = Some((LED_FIGURES_HEADER, "1"));
    for (leader, partitions) in by_leader {
        let asked = ask_leader::<LedFigures>(cluster, headers, marker, leader, &path, "figures");
        if let Some(answer) = asked.await {
            take(&mut figures, &answer, &partitions);
        }
    }
    Ok(figures)
}

/// This node's figures of the partitions it serves.
pub(crate) fn led(figures: &TopicFigures) -> LedFigures {
    let served = |p: &u32| figures.served.get(*p as usize).copied().unwrap_or(false);
    let delayed = (0u32..)
        .zip(&figures.delayed)
        .filter(|(p, _)| served(p))
        .map(|(p, n)| (p, *n))
        .collect();
    let subscriptions = figures
        .subscriptions
        .iter()
        .map(|s| LedSubscription {
            name: s.config.name.clone(),
            uid: s.config.uid,
            partitions: (0u32..)
                .zip(&s.partitions)
                .filter(|(p, _)| served(p))
                .map(|(p, stats)| (p, stats.clone()))
                .collect(),
        })
        .collect();
    LedFigures {
        delayed,
        subscriptions,
    }
}

/// Puts a leader's figures of `partitions` (those this node asked it for) in place of this
/// node's.
pub(crate) fn take(figures: &mut TopicFigures, answer: &LedFigures, partitions: &[u32]) {
    for (partition, count) in &answer.delayed {
        if partitions.contains(partition)
            && let Some(slot) = figures.delayed.get_mut(*partition as usize)
        {
            *slot = *count;
        }
    }
    for remote in &answer.subscriptions {
        let Some(local) = figures
            .subscriptions
            .iter_mut()
            .find(|s| s.config.name == remote.name && s.config.uid == remote.uid)
        else {
            continue;
        };
        for (partition, stats) in &remote.partitions {
            if partitions.contains(partition)
                && let Some(slot) = local.partitions.get_mut(*partition as usize)
            {
                *slot = stats.clone();
            }
        }
    }
}

/// Each subscription's stats: its partitions' figures added up, with the topic's delayed
/// messages.
pub(crate) fn summed(figures: TopicFigures) -> Vec<SubscriptionInfo> {
    let delayed: u64 = figures.delayed.iter().sum();
    figures
        .subscriptions
        .into_iter()
        .map(|s| {
            let mut stats = SubscriptionStats {
                delayed,
                ..SubscriptionStats::default()
            };
            for partition in &s.partitions {
                stats.add(partition);
            }
            SubscriptionInfo {
                config: s.config,
                stats,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use broker_core::broker::SubscriptionFigures;
    use broker_core::subscription::SubscriptionSpec;

    fn stats(in_flight: u64, age: Option<u64>) -> SubscriptionStats {
        SubscriptionStats {
            backlog: in_flight * 2,
            in_flight,
            delivered: in_flight,
            oldest_unacked_age_ms: age,
            ..SubscriptionStats::default()
        }
    }

    fn figures(uid: u64, served: Vec<bool>, parts: Vec<SubscriptionStats>) -> TopicFigures {
        let spec = SubscriptionSpec {
            name: "s".into(),
            ..SubscriptionSpec::default()
        };
        let config = spec.into_config("t", 0, uid).expect("a valid spec");
        TopicFigures {
            delayed: vec![1; served.len()],
            served,
            subscriptions: vec![SubscriptionFigures {
                config,
                partitions: parts,
            }],
        }
    }

    #[test]
    fn a_leaders_figures_replace_only_the_partitions_asked_of_it_and_sums_take_the_oldest_age() {
        let mut here = figures(
            7,
            vec![true, false, false],
            vec![stats(1, Some(10)), stats(0, None), stats(0, None)],
        );
        let there = led(&figures(
            7,
            vec![false, true, true],
            vec![stats(9, None), stats(2, Some(50)), stats(4, Some(30))],
        ));
        assert_eq!(there.delayed, vec![(1, 1), (2, 1)]);
        take(&mut here, &there, &[1]);
        let infos = summed(here);
        assert_eq!(infos.len(), 1);
        let sum = &infos[0].stats;
        assert_eq!(
            sum.in_flight, 3,
            "partition 0 here, 1 there, 2 left as it was"
        );
        assert_eq!(sum.backlog, 6);
        assert_eq!(sum.oldest_unacked_age_ms, Some(50));
        assert_eq!(sum.delayed, 3);
    }

    #[test]
    fn another_incarnations_figures_are_not_taken() {
        let mut here = figures(7, vec![false], vec![stats(0, None)]);
        let there = led(&figures(8, vec![true], vec![stats(5, None)]));
        take(&mut here, &there, &[0]);
        assert_eq!(summed(here)[0].stats.in_flight, 0);
    }
}
