from enum import StrEnum


class AlertKind(StrEnum):
    BACKLOG = "backlog"
    CONSUMER_OFFLINE = "consumer_offline"
    DEAD_LETTERS = "dead_letters"
    DISK = "disk"
    OLDEST_UNACKED_AGE = "oldest_unacked_age"
    PROBE = "probe"
    PRODUCE_ERRORS = "produce_errors"

    def __str__(self) -> str:
        return str(self.value)
