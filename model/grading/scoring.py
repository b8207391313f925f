"""Perturbed teacher-forced passes of one pair, batched and remembered: what every faithfulness metric and every
perturbation baseline reads.

The score of step t is log p(reference piece t) under the model, teacher-forced on the reference prefix (the metrics
read its probability, exp of it). Two perturbations:

* **hiding** a piece: its id replaced by the pad id, which the model masks as it masks padding (no attention reads
  it; the other pieces keep their positions). This is the report card's "removal" for deletion and insertion curves,
  comprehensiveness, sufficiency, occlusion, LIME and KernelSHAP (in place: it needs ``Capabilities.hides_pieces``);
* **leaving a piece out**: the sequence without it (the pieces after it move up a position), for leave-one-out.

A decoder-only model (``PromptScorer``) reads its prompt and the continuation in one decoder pass: a hidden prompt or
prefix piece is masked by the attention mask (its id stays; the other pieces keep their positions, which these
layouts count whatever the mask says), and a piece left out shortens the text.

An encoder-only model (``TextScorer``) reads its text through its head (the network's ``masked_logits``): a hidden
piece is masked from every position (positions kept), and the score of a prediction is log p of the head's own
decision there (model/grading/text_cases.py).

Rows for one step are cut after that step and read its logits only; rows for every step (``hidden_all``) serve each
step at once. Every row computed is remembered by its hidden pieces, so an order, a sample or a curve point met
again (the full source, the empty one, LIME's samples for the next step) costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
import torch

from model.family import capabilities_of
from model.grading.cases import GradedPair
from model.grading.text_cases import TextCase
from model.runtime import follow_free_cores

BATCH_ROWS = 128  # perturbed rows per pass (larger batches were no faster per row on 2 cores)


class PairScorer:
    """log p of each graded step's reference piece for one pair under a model, with pieces hidden or left out."""

    def __init__(self, model, case: GradedPair, check: Callable[[], None] | None = None) -> None:
        self.model, self.case, self.check = model, case, check or (lambda: None)
        self.device = next(model.parameters()).device
        self.hidden_id = self.hidden_id_of(model)  # what a hidden piece's id becomes
        self.source = torch.tensor(case.source_ids, device=self.device)  # [S + 1]
        self.inputs = torch.tensor(case.decoder_inputs, device=self.device)  # [T]
        self.references = torch.tensor(case.references, device=self.device)  # [T]
        self._step_memo: dict[tuple[bytes, int], float] = {}
        self._all_memo: dict[bytes, np.ndarray] = {}
        self.rows = 0  # rows computed (not found in the memo)
        self.full = self.hidden_all(np.ones((1, case.n_source), bool))[0]  # [T] nothing hidden

    @staticmethod
    def hidden_id_of(model) -> int:
        """A hidden piece's id: the pad id, which the model masks as padding."""
        return int(model.config.pad_id)

    # --- the model's passes ---------------------------------------------------------------------
    def _pass(self, source_ids: torch.Tensor, inputs: torch.Tensor, positions: torch.Tensor | None) -> np.ndarray:
        """Rows [N, S'], [N, L] -> log p of the references at every position [N, L], or at ``positions`` [N] only."""
        self.check()
        follow_free_cores()
        self.rows += source_ids.shape[0]
        with torch.inference_mode():
            hidden = self._states(source_ids, inputs)  # [N, L, ·]
            if positions is not None:
                hidden = hidden[torch.arange(hidden.shape[0], device=self.device), positions]  # [N, ·]
                references = self.references[positions]  # [N]
            else:
                references = self.references[: inputs.shape[1]].expand(hidden.shape[0], -1)  # [N, L]
            log_probabilities = torch.log_softmax(self._logits(hidden).float(), dim=-1)  # [N, (L,) V]
            return log_probabilities.gather(-1, references[..., None])[..., 0].double().cpu().numpy()

    def _states(self, source_ids: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Sources [N, S'] (hidden pieces: ``hidden_id``) and decoder inputs [N, L] -> what the model gives at each
        input [N, L, ·] (the app's Transformer: its hidden states; a library model: its logits), for ``_logits``."""
        return self.model(source_ids, inputs)

    def _logits(self, states: torch.Tensor) -> torch.Tensor:
        return self.model.logits(states)

    def _hidden_input_logits(self, source_ids: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Logits [N, L, V] of decoder inputs [N, L] whose hidden pieces are ``hidden_id`` (masked as padding by the
        model's inspection pass)."""
        return self.model.inspect(source_ids, inputs)[0]

    def _hidden_rows(self, keep: np.ndarray) -> torch.Tensor:
        """keep [N, S] (False: hidden) -> source ids [N, lead + S + 1] with the hidden pieces' ids replaced by the pad
        id (the leading pieces and </s> never hidden)."""
        rows = self.source.repeat(keep.shape[0], 1)  # [N, lead + S + 1]
        hidden = torch.from_numpy(~keep).to(self.device)  # [N, S]
        graded = slice(self.case.lead, self.case.lead + self.case.n_source)
        rows[:, graded] = rows[:, graded].masked_fill(hidden, self.hidden_id)
        return rows

    # --- hiding source pieces ---------------------------------------------------------------------
    def hidden_all(self, keep: np.ndarray) -> np.ndarray:
        """keep [N, S] -> log p at every graded step [N, T] with the pieces not kept hidden."""
        keys = [row.tobytes() for row in keep]
        missing = _first_of_each([index for index, key in enumerate(keys) if key not in self._all_memo], keys)
        for start in range(0, len(missing), BATCH_ROWS):
            chunk = missing[start : start + BATCH_ROWS]
            sources = self._hidden_rows(keep[chunk])
            found = self._pass(sources, self.inputs.expand(len(chunk), -1), None)  # [n, T]
            for index, row in zip(chunk, found):
                self._all_memo[keys[index]] = row
        return np.stack([self._all_memo[key] for key in keys]) if keys else np.zeros((0, self.case.n_steps))

    def hidden(self, keep: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """keep [N, S] and a step per row [N] -> log p at that step [N], each row cut after its step."""
        keys = [(row.tobytes(), int(step)) for row, step in zip(keep, steps)]
        missing = [index for index, key in enumerate(keys) if key not in self._step_memo and key[0] not in self._all_memo]
        by_step: dict[int, list[int]] = {}
        for index in _first_of_each(missing, keys):
            by_step.setdefault(keys[index][1], []).append(index)
        for step, indices in sorted(by_step.items()):
            for start in range(0, len(indices), BATCH_ROWS):
                chunk = indices[start : start + BATCH_ROWS]
                inputs = self.inputs[: step + 1].expand(len(chunk), -1)  # [n, step + 1]
                positions = torch.full((len(chunk),), step, device=self.device)
                for index, value in zip(chunk, self._pass(self._hidden_rows(keep[chunk]), inputs, positions)):
                    self._step_memo[keys[index]] = float(value)
        return np.array([self._read(key) for key in keys], dtype=np.float64)

    def _read(self, key: tuple[bytes, int]) -> float:
        every = self._all_memo.get(key[0])
        return float(every[key[1]]) if every is not None else self._step_memo[key]

    # --- leaving pieces out, hiding prefix pieces ------------------------------------------------------
    def left_out(self) -> np.ndarray:
        """log p at every step with each source piece left out [S, T] (the </s> stays)."""
        n, lead = self.case.n_source, self.case.lead
        rows = torch.stack([torch.cat([self.source[: lead + i], self.source[lead + i + 1 :]]) for i in range(n)])  # [S, S]
        return self._pass(rows, self.inputs.expand(n, -1), None)

    def prefix_left_out(self) -> np.ndarray:
        """[T, T]: log p at step t with decoder input j (a prefix piece, 1 <= j <= t) left out; NaN elsewhere (<s>, and
        inputs after the step, which it does not read)."""
        n = self.case.n_steps
        table = np.full((n, n), np.nan)
        if n < 2:
            return table
        rows = torch.stack([torch.cat([self.inputs[:j], self.inputs[j + 1 :]]) for j in range(1, n)])  # [n - 1, n - 1]
        self.check()
        self.rows += n - 1
        with torch.inference_mode():
            hidden = self._states(self.source.expand(n - 1, -1), rows)  # [n - 1, n - 1, ·]
            log_probabilities = torch.log_softmax(self._logits(hidden).float(), dim=-1)  # [n - 1, n - 1, V]
            # Without input j, position p >= j - 1 reads the original inputs up to p + 1: it predicts step p + 1.
            following = self.references[1:].expand(n - 1, -1)[..., None]  # [n - 1, n - 1, 1]
            found = log_probabilities.gather(-1, following)[..., 0].double().cpu().numpy()
        for j in range(1, n):
            table[j:, j] = found[j - 1, j - 1 :]
        return table

    def prefix_hidden_all(self, keep: np.ndarray) -> np.ndarray:
        """keep [N, T - 1] over the prefix pieces (decoder inputs 1..T-1) -> log p at every step [N, T] with those not
        kept hidden (masked as padding by the model's inspection pass)."""
        keys = [b"prefix" + row.tobytes() for row in keep]
        missing = _first_of_each([index for index, key in enumerate(keys) if key not in self._all_memo], keys)
        if missing:
            rows = self.inputs.repeat(len(missing), 1)  # [n, T]
            hidden = torch.from_numpy(~keep[missing]).to(self.device)  # [n, T - 1]
            rows[:, 1:] = rows[:, 1:].masked_fill(hidden, self.hidden_id)
            self.check()
            self.rows += len(missing)
            with torch.inference_mode():
                logits = self._hidden_input_logits(self.source.expand(len(missing), -1), rows)  # [n, T, V]
                log_probabilities = torch.log_softmax(logits.float(), dim=-1)
                references = self.references.expand(len(missing), -1)[..., None]  # [n, T, 1]
                found = log_probabilities.gather(-1, references)[..., 0].double().cpu().numpy()
            for index, row in zip(missing, found):
                self._all_memo[keys[index]] = row
        return np.stack([self._all_memo[key] for key in keys])


class PromptScorer(PairScorer):
    """A decoder-only model's scorer: the prompt (the case's source) and the decoder inputs read as one text, hidden
    pieces masked by the attention mask (see the module's docstring)."""

    HIDDEN = -1  # a hidden piece's id in the rows: masked, then read as any id

    @staticmethod
    def hidden_id_of(model) -> int:
        """Not the pad id: a decoder-only model's pad id is often one of its pieces (GPT-2's end of text)."""
        return PromptScorer.HIDDEN

    def _states(self, source_ids: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """The text [N, P - 1 + L]: the prompt but its last piece (which is the first decoder input), then the inputs;
        its logits at the decoder inputs [N, L, V]."""
        text = torch.cat([source_ids[:, :-1], inputs], 1)  # [N, P - 1 + L]
        keep = text.ne(self.HIDDEN)  # [N, P - 1 + L]
        logits = self.model.masked_logits(text.masked_fill(~keep, 0), keep.long())  # [N, P - 1 + L, V]
        return logits[:, source_ids.shape[1] - 1 :]  # [N, L, V]

    def _logits(self, states: torch.Tensor) -> torch.Tensor:
        return states  # the library's logits already

    def _hidden_input_logits(self, source_ids: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        return self._states(source_ids, inputs)


class TextScorer(PairScorer):
    """An encoder-only model's scorer: its head's log p of each decision (``TextCase``) with pieces of the text hidden
    in place (the network's ``masked_logits``: masked from every position, positions kept), or left out."""

    HIDDEN = -1  # a hidden piece's id in the rows: the network says what it reads there

    @staticmethod
    def hidden_id_of(model) -> int:
        return TextScorer.HIDDEN

    def _states(self, source_ids: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Texts [N, S'] (hidden pieces: HIDDEN) -> the head's scores at each prediction [N, T, C] (``inputs`` only
        count them)."""
        return self._head_scores(source_ids, cast(TextCase, self.case).rows)

    def _head_scores(self, texts: torch.Tensor, rows: list[list[int]]) -> torch.Tensor:
        """Texts [N, S'] -> scores [N, T, C]: prediction t's at the mean of its ``rows`` (a sentence head's own)."""
        keep = texts.ne(self.HIDDEN)  # [N, S']
        scores = self.model.masked_logits(texts.masked_fill(~keep, 0), keep)  # [N, S', C] or [N, C]
        if scores.dim() == 2:
            return scores[:, None]  # [N, 1, C]: the sentence's (its head read its rows)
        return torch.stack([scores[:, positions].mean(1) for positions in rows], 1)  # [N, T, C]

    def _logits(self, states: torch.Tensor) -> torch.Tensor:
        return states  # the head's scores already

    def left_out(self) -> np.ndarray:
        """log p at every prediction with each graded piece left out [S, T] (the pieces after it move up). A piece's
        own prediction (a tagger's, a masked-LM head's) cannot be read without it: there it is hidden in place."""
        n, lead, case = self.case.n_source, self.case.lead, cast(TextCase, self.case)
        table = np.empty((n, case.n_steps))
        references = self.references.expand(1, -1)[..., None]  # [1, T, 1]
        for i in range(n):
            self.check()
            self.rows += 1
            text = torch.cat([self.source[: lead + i], self.source[lead + i + 1 :]])[None]  # [1, S' - 1]
            moved = [[p - (p > lead + i) for p in rows if p != lead + i] or rows for rows in case.rows]
            with torch.inference_mode():
                log_probabilities = torch.log_softmax(self._head_scores(text, moved).float(), dim=-1)  # [1, T, C]
                table[i] = log_probabilities.gather(-1, references)[0, :, 0].double().cpu().numpy()
        if case.per_piece:  # a piece's own prediction: with the piece hidden in place instead
            alone = ~np.eye(n, dtype=bool)  # [S, S]: row i hides piece i
            table[np.arange(n), np.arange(n)] = np.diag(self.hidden_all(alone))
        return table

    def prefix_left_out(self) -> np.ndarray:
        """No target prefix: NaN [T, T]."""
        return np.full((self.case.n_steps, self.case.n_steps), np.nan)

    def prefix_hidden_all(self, keep: np.ndarray) -> np.ndarray:
        """No target prefix: NaN [N, T]."""
        return np.full((keep.shape[0], self.case.n_steps), np.nan)


def scorer_for(model, case: GradedPair, check: Callable[[], None] | None = None) -> PairScorer:
    """The scorer of ``model``'s family: one that reads a source and a target, a decoder-only model's prompt and
    continuation as one text, or an encoder-only model's text through its head."""
    architecture = capabilities_of(model).architecture
    if not architecture.has_decoder:
        return TextScorer(model, case, check)
    return PairScorer(model, case, check) if architecture.has_encoder else PromptScorer(model, case, check)


def _first_of_each(indices: list[int], keys: list) -> list[int]:
    """``indices`` less those whose key an earlier one of them has (a row asked twice is computed once)."""
    seen: set = set()
    first = []
    for index in indices:
        if keys[index] not in seen:
            seen.add(keys[index])
            first.append(index)
    return first
