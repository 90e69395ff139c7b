from enum import StrEnum


class TopBy(StrEnum):
    BACKLOG = "backlog"
    CONSUMED = "consumed"
    PRODUCED = "produced"

    def __str__(self) -> str:
        return str(self.value)
