"""The two sides of a comparison, and one value per side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

T = TypeVar("T")
Role = Literal["baseline", "target"]
ROLES: tuple[Role, Role] = ("baseline", "target")


@dataclass(frozen=True, kw_only=True, slots=True)
class ByRole(Generic[T]):
    """One value per side."""

    baseline: T
    target: T

    def of(self, role: Role) -> T:
        value: T = self.baseline if role == "baseline" else self.target
        return value

    def items(self) -> tuple[tuple[Role, T], tuple[Role, T]]:
        return (("baseline", self.baseline), ("target", self.target))
