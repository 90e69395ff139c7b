//! OpenAPI links from the operations that create a resource to the operations that use it:
//! creating a topic leads to describing, changing, deleting, producing to and reading it and
//! to its subscriptions; creating a subscription leads to receiving through it, seeking,
//! redriving, describing and deleting it. Clients and tools (schemathesis' stateful phase)
//! follow them to chain calls on real resources. Applied after the routes are collected.

use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::{OpenApi, RefOr};

/// One link: the response it hangs on, its name, the operation it leads to, and where that
/// operation's path parameters come from (runtime expressions or constants).
struct Link {
    path: &'static str,
    status: &'static str,
    name: &'static str,
    operation_id: &'static str,
    parameters: &'static [(&'static str, Parameter)],
}

/// Where a linked operation's parameter comes from.
#[derive(Clone, Copy)]
enum Parameter {
    /// A runtime expression, e.g. `$response.body#/name`.
    Expression(&'static str),
    /// A constant, written as a string: the OpenAPI 3.1 meta-schema takes strings only.
    Constant(&'static str),
}

const TOPICS: &str = "/v1/topics";
const SUBSCRIPTIONS: &str = "/v1/topics/{topic}/subscriptions";
const CREATED: &str = "201";

/// The created topic's name.
const NEW_TOPIC: (&str, Parameter) = ("topic", Parameter::Expression("$response.body#/name"));
/// The created subscription's topic.
const SUBSCRIPTION_TOPIC: (&str, Parameter) =
    ("topic", Parameter::Expression("$response.body#/topic"));
/// The created subscription's name.
const NEW_SUBSCRIPTION: (&str, Parameter) = ("sub", Parameter::Expression("$response.body#/name"));

const fn topic_link(name: &'static str, operation_id: &'static str) -> Link {
    Link {
        path: TOPICS,
        status: CREATED,
        name,
        operation_id,
        parameters: &[NEW_TOPIC],
    }
}

const fn subscription_link(name: &'static str, operation_id: &'static str) -> Link {
    Link {
        path: SUBSCRIPTIONS,
        status: CREATED,
        name,
        operation_id,
        parameters: &[SUBSCRIPTION_TOPIC, NEW_SUBSCRIPTION],
    }
}

/// Every link of the document. Every operation on `{topic}` or `{sub}` is reachable, except
/// the stream (an open-ended response) and the operations that need a receipt or a message
/// id in their body or path (ack, nack, extend, cancel).
const LINKS: &[Link] = &[
    topic_link("DescribeTopic", "describe_topic"),
    topic_link("UpdateTopic", "update_topic"),
    topic_link("DeleteTopic", "delete_topic"),
    topic_link("Produce", "produce"),
    topic_link("ListSubscriptions", "list_subscriptions"),
    topic_link("CreateSubscription", "create_subscription"),
    Link {
        path: TOPICS,
        status: CREATED,
        name: "ReadPartitionZero",
        operation_id: "read_partition",
        parameters: &[NEW_TOPIC, ("partition", Parameter::Constant("0"))],
    },
    subscription_link("DescribeSubscription", "describe_subscription"),
    subscription_link("DeleteSubscription", "delete_subscription"),
    subscription_link("Receive", "receive"),
    subscription_link("Seek", "seek"),
    subscription_link("Redrive", "redrive"),
];

/// Adds `LINKS` to the `POST` responses of `document` they hang on.
pub(crate) fn document_links(document: &mut OpenApi) {
    for link in LINKS {
        let Some(RefOr::T(response)) = document
            .paths
            .paths
            .get_mut(link.path)
            .and_then(|item| item.post.as_mut())
            .and_then(|operation| operation.responses.responses.get_mut(link.status))
        else {
            continue;
        };
        // utoipa 5.5 writes a link's operation id as `operation_id`; the specification's field
        // (what tools read) is `operationId`, so it goes in as a field of its own.
        let operation_id = Extensions::from_iter([("operationId", link.operation_id)]);
        let built = link
            .parameters
            .iter()
            .fold(
                LinkBuilder::new().extensions(Some(operation_id)),
                |builder, (name, value)| match value {
                    Parameter::Expression(text) | Parameter::Constant(text) => {
                        builder.parameter(*name, *text)
                    }
                },
            )
            .build();
        response.links.insert(link.name.to_owned(), RefOr::T(built));
    }
}
