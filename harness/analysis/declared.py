"""Whether a profile's design was declared before its data.

Each run's record holds the fingerprint of its profile's design when it ran (:mod:`harness.experiment.design`); a
design that changed after runs of the profile existed no longer keeps its stated error rate (docs/sequential.md, "A
design declared before its data").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from harness.experiment import design
from harness.experiment.selection import Selection
from harness.store.record import Record


@dataclass(frozen=True)
class DesignCheck:
    """How the selection's stored runs stand to its design now.

    Runs made under it (``same``), under another (``other``, by fingerprint) and with no fingerprint
    (``unrecorded``: made before records held one; named only beside runs that hold one, so that a store whose runs
    all lack one gets no warning: there is nothing to compare them with).
    """

    profile: str
    current: str
    same: int
    other: dict[str, int]
    unrecorded: int

    @property
    def changed(self) -> bool:
        """The design changed after runs of the profile existed."""
        return bool(self.other)

    def warning(self, confirmatory: bool = True) -> str | None:
        """What a report says of it (None: every run was made under the design declared now)."""
        runs = self.same + sum(self.other.values()) + self.unrecorded
        if self.changed:
            before = ", ".join(f"{fp} ({n} runs)" for fp, n in sorted(self.other.items()))
            tail = (
                "so its verdicts do not hold the stated error rate: a design chosen with results in hand can raise "
                "it (a fixed 8-seed test, then a group-sequential design declared because it was undecided: 0.088 "
                "for 0.05, docs/sequential.md); read them as exploratory, or run the profile again under a design "
                "declared before its runs (new seeds)"
            )
            return (
                f"the design of profile {self.profile!r} (its seeds, primary metrics, sesoi or sequential block) "
                f"changed after {sum(self.other.values())} of its {runs} runs were made: their design {before}, "
                f"now {self.current}; " + (tail if confirmatory else "a pilot: no verdict rests on it")
            )
        if self.unrecorded and self.same:  # every run older than fingerprints: nothing to compare, no warning
            return (
                f"{self.unrecorded} of the {runs} runs of profile {self.profile!r} were made before records held "
                f"their design's fingerprint: whether its design was declared before them is not recorded"
            )
        return None


def check(sel: Selection, records: list[Record]) -> DesignCheck:
    """The selection's ``records`` (those of its grid) against its profile's design now."""
    current = design.fingerprint(sel.ablation, sel.profile)
    seen = Counter(r.design for r in records)
    same, unrecorded = seen.pop(current, 0), seen.pop(None, 0)
    return DesignCheck(sel.profile, current, same, dict(seen), unrecorded)
