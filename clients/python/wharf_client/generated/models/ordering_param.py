from enum import StrEnum


class OrderingParam(StrEnum):
    KEY = "key"
    NONE = "none"

    def __str__(self) -> str:
        return str(self.value)
