"""The small language of head queries: what a head does in a sentence, as the heads table measures it.

A predicate is one or more conditions joined by ``and``: ``previous >= 0.5``, ``eos >= 0.5 and entropy < 0.3``,
``role ~ previous``. A condition is NAME OPERATOR VALUE, with OPERATOR one of < <= > >= = != and a number for VALUE;
``role`` takes = (the whole role) or ~ (a part of it, any case) and a word or a quoted text. Every name is checked
against ``FIELDS`` and every value bound as a parameter, so the text never reaches SQL.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from model.corpus.layout import CorpusIndexError

# name -> (head_stats column, what it is)
FIELDS: dict[str, tuple[str, str]] = {
    "entropy": ("normalised_entropy", "normalised entropy, 0 (one key) to 1 (uniform)"),
    "entropy_nats": ("entropy", "mean entropy of the rows, in nats"),
    "previous": ("previous_share", "share of attention on the previous token"),
    "next": ("next_share", "share on the next token (encoder)"),
    "self": ("self_share", "share on the token itself"),
    "first": ("first_share", "share on the first key (<s> in the decoder)"),
    "bos": ("first_share", "as first"),
    "last": ("last_share", "share on the last key (</s> of the source)"),
    "eos": ("last_share", "as last"),
    "punctuation": ("punctuation_share", "share on punctuation"),
    "max": ("max_weight", "mean of each row's largest weight"),
    "distance": ("distance", "mean query-key distance weighted by attention"),
    "spread": ("peak_spread", "distinct keys the rows peak on, over the rows"),
    "role_score": ("role_score", "the statistic that decided the role"),
    "role": ("role", "the head's role: =, or ~ for a part of it"),
}
NUMERIC_OPERATORS = ("<=", ">=", "!=", "<", ">", "=")
TEXT_OPERATORS = ("=", "~")
CONDITION = re.compile(r"^\s*([A-Za-z_]+)\s*(<=|>=|!=|<|>|=|~)\s*(.*?)\s*$")


class PredicateError(CorpusIndexError):
    """A head query that is not written in the predicate language; the message says what is wrong."""


@dataclass(frozen=True)
class Condition:
    name: str  # as written: "previous"
    column: str  # head_stats column: "previous_share"
    operator: str
    value: float | str


def _help() -> str:
    return "names: " + ", ".join(FIELDS)


def _condition(text: str, whole: str) -> Condition:
    match = CONDITION.match(text)
    if not match:
        raise PredicateError(f"{whole!r}: {text.strip()!r} is not NAME OPERATOR VALUE (e.g. previous >= 0.5)")
    name, operator, value_text = match.group(1).lower(), match.group(2), match.group(3)
    if name not in FIELDS:
        raise PredicateError(f"{whole!r}: unknown name {name!r}; {_help()}")
    column = FIELDS[name][0]
    if not value_text:
        raise PredicateError(f"{whole!r}: {name} {operator} needs a value")
    if name == "role":
        if operator not in TEXT_OPERATORS:
            raise PredicateError(f"{whole!r}: role takes = or ~ (a part of the role), not {operator}")
        return Condition(name, column, operator, value_text.strip("\"'"))
    if operator == "~":
        raise PredicateError(f"{whole!r}: ~ is for role; {name} takes {' '.join(NUMERIC_OPERATORS)}")
    try:
        value = float(value_text)
    except ValueError:
        raise PredicateError(f"{whole!r}: {value_text!r} is not a number") from None
    if not math.isfinite(value):
        raise PredicateError(f"{whole!r}: {value_text!r} is not a finite number")
    return Condition(name, column, operator, value)


def parse_predicate(text: str) -> list[Condition]:
    """The conditions of ``text`` (joined by "and"); PredicateError, one line, for anything else."""
    if not text or not text.strip():
        raise PredicateError(f"an empty head query; write e.g. previous >= 0.5 ({_help()})")
    if re.search(r"\bor\b|[;()]|--", text, flags=re.IGNORECASE):
        raise PredicateError(f"{text!r}: conditions are joined by 'and' only (no 'or', brackets or semicolons)")
    return [_condition(part, text) for part in re.split(r"\s+and\s+", text.strip(), flags=re.IGNORECASE)]


def where_sql(conditions: list[Condition]) -> tuple[str, list[float | str]]:
    """(SQL over head_stats aliased h, its parameters): the names are the table's own columns, the values bound."""
    parts: list[str] = []
    parameters: list[float | str] = []
    for condition in conditions:
        if condition.operator == "~":
            parts.append(f"h.{condition.column} ILIKE ?")
            parameters.append(f"%{condition.value}%")
        else:
            parts.append(f"h.{condition.column} {condition.operator} ?")
            parameters.append(condition.value)
    return " AND ".join(parts), parameters


def order_column(conditions: list[Condition], order_by: str | None, descending: bool | None) -> tuple[str, bool]:
    """(the column to sort by, largest first?): ``order_by`` (a name of the language), else the first numeric
    condition's column, largest first unless it asks for small values."""
    if order_by is not None:
        name = order_by.lower()
        if name not in FIELDS:
            raise PredicateError(f"cannot sort by {order_by!r}; {_help()}")
        return FIELDS[name][0], True if descending is None else descending
    for condition in conditions:
        if condition.name != "role":
            return condition.column, condition.operator not in ("<", "<=") if descending is None else descending
    return "role_score", True if descending is None else descending
