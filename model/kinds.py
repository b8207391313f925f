"""The typed names the whole app shares: the kinds of attention a model has, and why training stopped.

``AttentionKind`` is the one vocabulary for attention everywhere (the Trace, selection, head
statistics, figures, the window, the command line). It is a ``str`` enum, so the values people type
on the command line and that settings files hold ("encoder", "decoder", "cross") are the kinds
themselves.
"""

from __future__ import annotations

from enum import Enum

from model.errors import UserError


class SelectionError(UserError):
    """A kind, layer, head or step that the trace does not have."""


class KindError(SelectionError):
    """A name that is not a kind of attention."""


class ShownName(str, Enum):
    """A ``str`` enum whose value is the name shown, typed and saved: ``str()`` and formatting give that name."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class AttentionKind(ShownName):
    ENCODER = "encoder"  # encoder self-attention: source pieces attend to source pieces
    DECODER = "decoder"  # decoder masked self-attention: each decoder input attends to itself and earlier ones
    CROSS = "cross"  # cross-attention: each target step attends to the source pieces

    @property
    def field(self) -> str:
        """The Trace field that holds this kind: encoder_self, decoder_self or cross."""
        return {"encoder": "encoder_self", "decoder": "decoder_self", "cross": "cross"}[self.value]

    @property
    def label(self) -> str:
        """What a person calls it, in menus, figure titles and captions."""
        return {
            "encoder": "encoder self-attention",
            "decoder": "decoder masked self-attention",
            "cross": "cross-attention (encoder-decoder)",
        }[self.value]

    @property
    def axis_names(self) -> tuple[str, str]:
        """(query axis, key axis) as figures label them."""
        return {
            "encoder": ("query (source)", "key (source)"),
            "decoder": ("query (target input)", "key (target input)"),
            "cross": ("query (target)", "key (source)"),
        }[self.value]

    @property
    def causal(self) -> bool:
        """Whether a query sees only itself and earlier keys."""
        return self is AttentionKind.DECODER

    @property
    def follows_decoding(self) -> bool:
        """Whether its query rows grow by one per decoding step (so one row is the current step's)."""
        return self is not AttentionKind.ENCODER

    @property
    def is_self_attention(self) -> bool:
        return self is not AttentionKind.CROSS

    @property
    def stack(self) -> str:
        """The stack whose layers hold it: "encoder" (its self-attention) or "decoder" (the other two)."""
        return "encoder" if self is AttentionKind.ENCODER else "decoder"

    @classmethod
    def parse(cls, text: str | AttentionKind) -> AttentionKind:
        """'encoder', 'decoder', 'cross', the Trace's field names, or the short 'enc'/'dec'."""
        if isinstance(text, AttentionKind):
            return text
        name = {"encoder_self": "encoder", "decoder_self": "decoder", "enc": "encoder", "dec": "decoder"}.get(str(text), str(text))
        try:
            return cls(name)
        except ValueError:
            raise KindError(f"kind must be encoder, decoder or cross, not {text!r}") from None


def current_row(kind: AttentionKind, n_queries: int) -> int | None:
    """The row of the step being decoded (the last one) for kinds that follow decoding; None otherwise."""
    return n_queries - 1 if AttentionKind.parse(kind).follows_decoding and n_queries else None


class StopReason(ShownName):
    """Why a training run ended."""

    FINISHED = "finished"  # every planned epoch
    CANCELLED = "cancelled"  # the user stopped it (Stop, Cancel, Ctrl-C)
    TIME_BUDGET = "time budget"  # --max-minutes ran out
    MAX_STEPS = "max steps"  # --max-steps reached
    EARLY_STOP = "early stop"  # validations stopped improving (--patience)
    DIVERGED = "diverged"  # the loss became NaN or infinite

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
