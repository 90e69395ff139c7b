from enum import StrEnum


class ProduceAck(StrEnum):
    ALL = "all"
    LEADER = "leader"
    NONE = "none"

    def __str__(self) -> str:
        return str(self.value)
