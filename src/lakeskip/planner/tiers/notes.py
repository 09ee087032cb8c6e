"""What a plan warned about: each message once, as a :class:`~lakeskip.errors.LakeskipWarning`
and in the plan's report."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from lakeskip.errors import LakeskipWarning

__all__ = ["PlanNotes"]


@dataclass(slots=True)
class PlanNotes:
    """The warnings of one plan, in the order first said."""

    messages: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        if message not in self.messages:
            self.messages.append(message)
            warnings.warn(message, LakeskipWarning, stacklevel=4)
