"""One cross-field problem type: what is wrong across fields, each at the field to change.

A pydantic validator that checks several fields raises `FieldProblems`; `yamlfile.describe` (and the
reference loader) then tell each problem at its field's line, rather than at the line of the model
that holds them (the top of the file).
"""

from __future__ import annotations


class FieldProblems(ValueError):
    """Problems across fields: `problems` holds (loc below the model that raises it, message) pairs."""

    def __init__(self, problems: list[tuple[tuple, str]]):
        self.problems = problems
        super().__init__("; ".join(msg for _, msg in problems))


def raise_any(problems: list[tuple[tuple, str]]) -> None:
    """Raise FieldProblems when there is any problem."""
    if problems:
        raise FieldProblems(problems)
