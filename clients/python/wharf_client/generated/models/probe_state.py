from enum import StrEnum


class ProbeState(StrEnum):
    FAILING = "failing"
    OFF = "off"
    OK = "ok"
    STARTING = "starting"

    def __str__(self) -> str:
        return str(self.value)
