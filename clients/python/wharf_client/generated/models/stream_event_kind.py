from enum import StrEnum


class StreamEventKind(StrEnum):
    ERROR = "error"
    MESSAGE = "message"

    def __str__(self) -> str:
        return str(self.value)
