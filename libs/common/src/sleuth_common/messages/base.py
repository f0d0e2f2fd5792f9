"""Base class of every bus message."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Message"]


class Message(BaseModel):
    """A frozen bus message. Subclasses add ``kind: Literal[...]`` and ``schema_version``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()
