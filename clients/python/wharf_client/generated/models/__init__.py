"""Contains all the data models used in inputs/outputs"""

from .ack_request import AckRequest
from .ack_response import AckResponse
from .active_alert import ActiveAlert
from .active_alert_list import ActiveAlertList
from .actor import Actor
from .alert_kind import AlertKind
from .alert_rule import AlertRule
from .alert_rule_list import AlertRuleList
from .cluster_view import ClusterView
from .create_subscription_request import CreateSubscriptionRequest
from .create_topic_request import CreateTopicRequest
from .drain_view import DrainView
from .extend_request import ExtendRequest
from .extend_response import ExtendResponse
from .failed_move_view import FailedMoveView
from .failed_receipt import FailedReceipt
from .filter_body import FilterBody
from .group_view import GroupView
from .health_status import HealthStatus
from .history_answer import HistoryAnswer
from .key_answer import KeyAnswer
from .keyed_message import KeyedMessage
from .leader_view import LeaderView
from .log_message import LogMessage
from .log_message_headers import LogMessageHeaders
from .message_copy import MessageCopy
from .message_trace_answer import MessageTraceAnswer
from .move_leader_request import MoveLeaderRequest
from .nack_request import NackRequest
from .nack_response import NackResponse
from .node_view import NodeView
from .openapi_json_response_200 import OpenapiJsonResponse200
from .ordering_param import OrderingParam
from .partition_page import PartitionPage
from .partition_stats import PartitionStats
from .partition_view import PartitionView
from .patch_topic_request import PatchTopicRequest
from .probe_state import ProbeState
from .probe_status import ProbeStatus
from .problem import Problem
from .produce_ack import ProduceAck
from .produce_message import ProduceMessage
from .produce_message_headers_type_0 import ProduceMessageHeadersType0
from .produce_request import ProduceRequest
from .produce_response import ProduceResponse
from .produced import Produced
from .produced_message import ProducedMessage
from .rate_limit_body import RateLimitBody
from .rebalance_view import RebalanceView
from .receive_body import ReceiveBody
from .receive_response import ReceiveResponse
from .received_message import ReceivedMessage
from .redrive_request import RedriveRequest
from .redrive_response import RedriveResponse
from .replica_view import ReplicaView
from .retry import Retry
from .retry_request import RetryRequest
from .seek_end import SeekEnd
from .seek_request import SeekRequest
from .seek_request_offsets import SeekRequestOffsets
from .seek_response import SeekResponse
from .seek_response_positions import SeekResponsePositions
from .start import Start
from .stream_event import StreamEvent
from .stream_event_kind import StreamEventKind
from .subscription import Subscription
from .subscription_list import SubscriptionList
from .subscription_point import SubscriptionPoint
from .subscription_stats_view import SubscriptionStatsView
from .subscription_trace_view import SubscriptionTraceView
from .top_answer import TopAnswer
from .top_by import TopBy
from .top_item import TopItem
from .topic import Topic
from .topic_list import TopicList
from .topic_point import TopicPoint
from .trace_event import TraceEvent

__all__ = (
    "AckRequest",
    "AckResponse",
    "ActiveAlert",
    "ActiveAlertList",
    "Actor",
    "AlertKind",
    "AlertRule",
    "AlertRuleList",
    "ClusterView",
    "CreateSubscriptionRequest",
    "CreateTopicRequest",
    "DrainView",
    "ExtendRequest",
    "ExtendResponse",
    "FailedMoveView",
    "FailedReceipt",
    "FilterBody",
    "GroupView",
    "HealthStatus",
    "HistoryAnswer",
    "KeyAnswer",
    "KeyedMessage",
    "LeaderView",
    "LogMessage",
    "LogMessageHeaders",
    "MessageCopy",
    "MessageTraceAnswer",
    "MoveLeaderRequest",
    "NackRequest",
    "NackResponse",
    "NodeView",
    "OpenapiJsonResponse200",
    "OrderingParam",
    "PartitionPage",
    "PartitionStats",
    "PartitionView",
    "PatchTopicRequest",
    "ProbeState",
    "ProbeStatus",
    "Problem",
    "ProduceAck",
    "ProduceMessage",
    "ProduceMessageHeadersType0",
    "ProduceRequest",
    "ProduceResponse",
    "Produced",
    "ProducedMessage",
    "RateLimitBody",
    "RebalanceView",
    "ReceiveBody",
    "ReceiveResponse",
    "ReceivedMessage",
    "RedriveRequest",
    "RedriveResponse",
    "ReplicaView",
    "Retry",
    "RetryRequest",
    "SeekEnd",
    "SeekRequest",
    "SeekRequestOffsets",
    "SeekResponse",
    "SeekResponsePositions",
    "Start",
    "StreamEvent",
    "StreamEventKind",
    "Subscription",
    "SubscriptionList",
    "SubscriptionPoint",
    "SubscriptionStatsView",
    "SubscriptionTraceView",
    "TopAnswer",
    "TopBy",
    "TopItem",
    "Topic",
    "TopicList",
    "TopicPoint",
    "TraceEvent",
)
