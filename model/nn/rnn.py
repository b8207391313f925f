"""An RNN encoder-decoder with attention (seed 002): Bahdanau's additive score, or Luong's dot, general or concat.

The encoder embeds the source and reads it with one bidirectional GRU or LSTM of d_hidden / 2 units a direction,
so each annotation h_j (the forward and backward states at piece j, concatenated) is d_hidden wide, as wide as
the decoder's state (Luong's dot score needs that). Padded batches are packed with their real lengths, so the
backward direction starts at each sentence's last real piece; padded annotations are zero. The decoder starts
from s_0 = tanh(W_init mean_j h_j), the mean over real pieces (an LSTM's cell state starts at zero).

One decoding step, from the previous target piece y_{t-1} (embedded E y_{t-1}):

* Bahdanau (scores the PREVIOUS state): e_tj = v_a^T tanh(W_a s_{t-1} + U_a h_j), alpha_t = softmax_j(e_t),
  c_t = sum_j alpha_tj h_j, s_t = cell([E y_{t-1}; c_t], s_{t-1}), output o_t = tanh(W_o [s_t; c_t; E y_{t-1}]);
* Luong (scores the CURRENT state, with input feeding): h_t = cell([E y_{t-1}; h~_{t-1}], h_{t-1}) with h~_0 = 0;
  score(h_t, h_s) = h_t^T h_s (dot), h_t^T W_a h_s (general) or v_a^T tanh(W_a [h_t; h_s]) (concat); alpha_t and
  c_t as above; output o_t = h~_t = tanh(W_c [c_t; h_t]).

Logits are W_out o_t. U_a h_j (Bahdanau), W_a h_s (general) and the key half of concat's W_a are computed once per
sentence, in the cache (``RNNCache``).

Local-p attention (``local_window`` D >= 1, with any score and the query state that score uses): the decoder
predicts a source position p_t = (S_real - 1) sigmoid(v_p^T tanh(W_p q)), S_real being the sentence's number of
real pieces, and the weights are softmax over the positions s with |s - p_t| <= D of score_s - (s - p_t)^2 / (2
sigma^2), sigma = D / 2, and exactly 0 elsewhere. That is Luong's softmax times the Gaussian exp(-(s - p_t)^2 / (2
sigma^2)), renormalised over the window. Luong et al. did not renormalise (their rows sum to less than 1) and used
S, not S - 1: we renormalise so that every row is a distribution over the source, like global attention's (the
views, alignment and AER read rows as distributions), and scale by S_real - 1 so that p_t lands on a real piece
(0-based positions run 0 .. S_real - 1; S would let it fall past the last one, or onto padding).

Masked positions (padding, outside the window) get -inf before the softmax, so their weights are exactly 0. The
one attention distribution a step computes is the model's cross-attention: as a model family (model/family.py)
it has that kind only, with one layer and one head. Dropout (embeddings, each step's output) acts in training only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from model.network import AttentionWeights
from model.nn.dropout import Dropout
from model.nn.packing import PackedRows
from model.nn.rnn_config import ATTENTIONS, CELLS, RNNConfig
from model.nn.transformer import init_linear, side_embedding

__all__ = ["ATTENTIONS", "CELLS", "DecoderState", "RNNAttention", "RNNCache", "RNNConfig"]


@dataclass
class DecoderState:
    """The decoder's state after some steps: what the next step starts from."""

    hidden: torch.Tensor  # [B, d_hidden] s_t (Bahdanau) or h_t (Luong)
    cell: torch.Tensor | None  # [B, d_hidden] an LSTM's cell state; None for a GRU
    feed: torch.Tensor | None  # [B, d_hidden] Luong's h~_t, fed into the next step; None for Bahdanau

    def select(self, rows: torch.Tensor) -> DecoderState:
        return DecoderState(
            self.hidden[rows], None if self.cell is None else self.cell[rows], None if self.feed is None else self.feed[rows]
        )


@dataclass
class RNNCache:
    """What incremental decoding keeps: the memory with what is precomputed from it once per sentence, and the
    decoder's state after every step so far (``states[t]`` after t steps), so that stepping back is exact."""

    memory: torch.Tensor  # [B, S, d_hidden] the annotations h_j; zero at padding
    mask: torch.Tensor  # bool [B, S], True at real source pieces
    keys: torch.Tensor  # [B, S, d_hidden] U_a h_j, W_a h_s, concat's W_a half times h_s, or the memory itself (dot)
    lengths: torch.Tensor  # long [B] real source pieces of each sentence
    last: torch.Tensor  # [B] float: lengths - 1, the furthest local-p's predicted position may go
    positions: torch.Tensor  # [S] float: 0 .. S - 1, the source positions local-p measures distances on
    states: list[DecoderState]  # states[0] is the initial state; states[t] follows t steps

    @property
    def length(self) -> int:
        """Target positions consumed so far."""
        return len(self.states) - 1

    def select(self, rows: torch.Tensor) -> RNNCache:
        """Reorder/replicate batch rows (beam search): every batch tensor indexed by ``rows``."""
        memory = self.memory[rows]
        return RNNCache(
            memory=memory,
            mask=self.mask[rows],
            keys=memory if self.keys is self.memory else self.keys[rows],
            lengths=self.lengths[rows],
            last=self.last[rows],
            positions=self.positions,
            states=[state.select(rows) for state in self.states],
        )

    def truncate(self, length: int) -> None:
        """Forget every step from ``length`` on (stepping back): decoding continues from the state after ``length``."""
        del self.states[max(length, 0) + 1 :]


class RNNAttention(nn.Module):
    """Bidirectional RNN encoder, RNN decoder with one attention per step; see RNNConfig for every choice it makes."""

    def __init__(self, config: RNNConfig):
        super().__init__()
        config.validate()
        self.config = config
        d_embed, d_hidden = config.d_embed, config.d_hidden
        self.luong = config.attention != "bahdanau"
        self.additive = config.attention in ("bahdanau", "luong-concat")  # v_a^T tanh(query part + key part)
        if config.joint_vocab:
            self.embeddings = nn.ModuleDict({"shared": nn.Embedding(config.source_vocab_size, d_embed)})
        else:
            self.embeddings = nn.ModuleDict(
                {
                    "source": nn.Embedding(config.source_vocab_size, d_embed),
                    "target": nn.Embedding(config.target_vocab_size, d_embed),
                }
            )
        recurrent, cell = (nn.GRU, nn.GRUCell) if config.cell == "gru" else (nn.LSTM, nn.LSTMCell)
        self.encoder = recurrent(d_embed, d_hidden // 2, batch_first=True, bidirectional=True)
        self.decoder_cell = cell(d_embed + d_hidden, d_hidden)  # input [E y; c_t] (Bahdanau) or [E y; h~] (Luong)
        self.init_projection = nn.Linear(d_hidden, d_hidden, bias=False)  # W_init
        # Additive scores: W_a (Bahdanau) or concat's W_a split as [W_q | W_k]; general: W_a on the memory; dot: none.
        self.query_projection = nn.Linear(d_hidden, d_hidden, bias=False) if self.additive else None
        self.key_projection = nn.Linear(d_hidden, d_hidden, bias=False) if config.attention != "luong-dot" else None
        self.score_vector = nn.Linear(d_hidden, 1, bias=False) if self.additive else None  # v_a
        self.position_projection = nn.Linear(d_hidden, d_hidden, bias=False) if config.local_window else None  # W_p
        self.position_vector = nn.Linear(d_hidden, 1, bias=False) if config.local_window else None  # v_p
        # W_o on [s_t; c_t; E y_{t-1}] (Bahdanau) or W_c on [c_t; h_t] (Luong).
        self.combine = nn.Linear(2 * d_hidden + (0 if self.luong else d_embed), d_hidden, bias=False)
        self.output_projection = nn.Linear(d_hidden, config.target_vocab_size)  # W_out
        self.dropout = Dropout(config.dropout)
        # 2 sigma^2 with sigma = D / 2, as its reciprocal: the Gaussian's log is -(s - p_t)^2 * this.
        self.gaussian_scale = 2.0 / config.local_window**2 if config.local_window else 0.0
        self._init_weights()

    def _init_weights(self) -> None:
        for module in self.modules():
            init_linear(module)
            if isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=0.1)
            elif isinstance(module, (nn.GRU, nn.LSTM, nn.GRUCell, nn.LSTMCell)):
                gates = 3 if isinstance(module, (nn.GRU, nn.GRUCell)) else 4
                for name, parameter in module.named_parameters():
                    if name.startswith("weight_hh"):  # one orthogonal matrix per gate keeps the recurrence's gain near 1
                        for block in parameter.data.chunk(gates, 0):
                            nn.init.orthogonal_(block)
                    elif name.startswith("weight_ih"):
                        for block in parameter.data.chunk(gates, 0):
                            nn.init.xavier_uniform_(block)
                    else:
                        nn.init.zeros_(parameter)
                        if gates == 4 and name.startswith("bias_ih"):  # an LSTM remembers by default: forget bias 1
                            parameter.data.chunk(4)[1].fill_(1.0)

    @property
    def source_embedding(self) -> nn.Embedding:
        return side_embedding(self.embeddings, "source")

    @property
    def target_embedding(self) -> nn.Embedding:
        return side_embedding(self.embeddings, "target")

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def module_tree(self) -> nn.Module:
        """The module whose parts are its layers, embeddings and head (the report card's cascade): itself."""
        return self

    # --- encoder ----------------------------------------------------------------------------------
    def encode(self, source_ids: torch.Tensor, need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor, list]:
        """source_ids [B, S] (padding after the real pieces) -> (memory [B, S, d_hidden], mask bool [B, S] True at
        real pieces, []): an RNN encoder has no self-attention, so ``need_weights`` adds nothing."""
        batch, length = source_ids.shape
        if length > self.config.max_len:
            raise ValueError(f"sequence of {length} pieces exceeds max_len {self.config.max_len}")
        mask = source_ids != self.config.pad_id  # [B, S]
        lengths = mask.sum(1).cpu()  # [B] on the CPU, as packing wants them
        shortest = int(lengths.min()) if batch else length
        if shortest < 1:
            raise ValueError("every source sentence needs at least one real piece")
        x = self.dropout(self.source_embedding(source_ids))  # [B, S, d_embed]
        if shortest == length:  # nothing padded: no packing needed
            memory, _ = self.encoder(x)  # [B, S, d_hidden]
        else:
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            memory, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True, total_length=length)  # [B, S, d_hidden]
        return memory, mask, []

    def start_cache(self, memory: torch.Tensor, mask: torch.Tensor | None) -> RNNCache:
        """The decoder's initial state and the per-sentence keys, from the memory [B, S, d_hidden]."""
        if mask is None:
            mask = torch.ones(memory.shape[:2], dtype=torch.bool, device=memory.device)  # [B, S]
        lengths = mask.sum(1)  # [B]
        mean = memory.masked_fill(~mask[:, :, None], 0.0).sum(1) / lengths[:, None].to(memory.dtype)  # [B, d_hidden]
        hidden = torch.tanh(self.init_projection(mean))  # [B, d_hidden] s_0
        zeros = torch.zeros_like(hidden)
        state = DecoderState(hidden, zeros if self.config.cell == "lstm" else None, zeros if self.luong else None)
        keys = memory if self.key_projection is None else self.key_projection(memory)  # [B, S, d_hidden]
        positions = torch.arange(memory.shape[1], dtype=memory.dtype, device=memory.device)  # [S]
        return RNNCache(memory, mask, keys, lengths, (lengths - 1).to(memory.dtype), positions, [state])

    # --- one step ---------------------------------------------------------------------------------
    def _attend(self, query: torch.Tensor, cache: RNNCache) -> tuple[torch.Tensor, torch.Tensor]:
        """query [B, d_hidden] (s_{t-1} or h_t) -> (context c_t [B, d_hidden], weights [B, S])."""
        if self.query_projection is not None and self.score_vector is not None:  # additive: Bahdanau, Luong concat
            energy = torch.tanh(cache.keys + self.query_projection(query)[:, None, :])  # [B, S, d_hidden]
            scores = self.score_vector(energy).squeeze(-1)  # [B, S]
        else:  # dot or general: keys are h_s or W_a h_s
            scores = torch.bmm(cache.keys, query[:, :, None]).squeeze(-1)  # [B, S]
        allowed = cache.mask  # [B, S]
        if self.position_projection is not None and self.position_vector is not None:  # local-p
            fraction = torch.sigmoid(self.position_vector(torch.tanh(self.position_projection(query)))).squeeze(-1)  # [B]
            offset = cache.positions - (cache.last * fraction)[:, None]  # [B, S] s - p_t
            scores = scores - offset.square() * self.gaussian_scale  # [B, S]
            allowed = allowed & (offset.abs() <= self.config.local_window)  # [B, S]
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)  # [B, S]
        context = torch.bmm(weights[:, None, :], cache.memory).squeeze(1)  # [B, d_hidden]
        return context, weights

    def _advance(self, inputs: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The decoder cell: inputs [B, d_embed + d_hidden] -> (hidden [B, d_hidden], LSTM cell or None)."""
        if state.cell is None:
            return self.decoder_cell(inputs, state.hidden), None
        hidden, cell = self.decoder_cell(inputs, (state.hidden, state.cell))
        return hidden, cell

    def _step(
        self, embedded: torch.Tensor, state: DecoderState, cache: RNNCache
    ) -> tuple[torch.Tensor, torch.Tensor, DecoderState]:
        """embedded E y_{t-1} [B, d_embed] -> (output o_t [B, d_hidden], weights [B, S], state after the step).
        The one step code that decode_step, forward and inspect all run."""
        if not self.luong:  # Bahdanau: attend with s_{t-1}, then update the state
            context, weights = self._attend(state.hidden, cache)  # [B, d_hidden], [B, S]
            hidden, cell = self._advance(torch.cat([embedded, context], dim=-1), state)  # [B, d_hidden]
            output = self.dropout(torch.tanh(self.combine(torch.cat([hidden, context, embedded], dim=-1))))  # [B, d_hidden]
            return output, weights, DecoderState(hidden, cell, None)
        assert state.feed is not None, "Luong's decoder feeds its last output back in"
        hidden, cell = self._advance(torch.cat([embedded, state.feed], dim=-1), state)  # [B, d_hidden] h_t
        context, weights = self._attend(hidden, cache)  # [B, d_hidden], [B, S]
        output = self.dropout(torch.tanh(self.combine(torch.cat([context, hidden], dim=-1))))  # [B, d_hidden] h~_t
        return output, weights, DecoderState(hidden, cell, output)

    def decode_step(self, token_ids: torch.Tensor, cache: RNNCache) -> tuple[torch.Tensor, list, list[torch.Tensor]]:
        """Incremental decoding: one token per row [B] -> (output [B, d_hidden], [] (no decoder self-attention),
        [cross-attention weights [B, 1, S]]). Appends the new state to ``cache``."""
        if cache.length >= self.config.max_len:
            raise ValueError(f"sequence of {cache.length + 1} pieces exceeds max_len {self.config.max_len}")
        embedded = self.dropout(self.target_embedding(token_ids))  # [B, d_embed]
        output, weights, state = self._step(embedded, cache.states[-1], cache)
        cache.states.append(state)
        return output, [], [weights[:, None, :]]

    def _teacher_forced(
        self, target_ids: torch.Tensor, cache: RNNCache, need_weights: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every step over target_ids [B, T] from the cache's current state (which it leaves unchanged) ->
        (outputs [B, T, d_hidden], weights [B, T, S] when asked)."""
        length = target_ids.shape[1]
        if cache.length + length > self.config.max_len:
            raise ValueError(f"sequence of {cache.length + length} pieces exceeds max_len {self.config.max_len}")
        embedded = self.dropout(self.target_embedding(target_ids))  # [B, T, d_embed]
        state = cache.states[-1]
        outputs, rows = [], []
        for t in range(length):
            output, weights, state = self._step(embedded[:, t], state, cache)
            outputs.append(output)
            if need_weights:
                rows.append(weights)
        stacked = torch.stack(outputs, dim=1) if outputs else embedded.new_zeros(target_ids.shape[0], 0, self.config.d_hidden)
        if not need_weights:
            return stacked, None
        weights = torch.stack(rows, dim=1) if rows else cache.memory.new_zeros(target_ids.shape[0], 0, cache.memory.shape[1])
        return stacked, weights  # [B, T, d_hidden], [B, T, S]

    def logits(self, output: torch.Tensor) -> torch.Tensor:
        """output [..., d_hidden] -> unnormalised scores over the target vocabulary [..., V]."""
        return self.output_projection(output)

    def forward(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor, rows: PackedRows | None = None) -> torch.Tensor:
        """Teacher forcing: [B, S], [B, T] -> outputs [B, T, d_hidden], or [N, d_hidden] for only the target positions
        in ``rows`` (training passes the real ones). Padded target positions follow the real ones, so they change
        no real position's output."""
        memory, mask, _ = self.encode(source_ids)
        outputs, _ = self._teacher_forced(target_input_ids, self.start_cache(memory, mask))
        return outputs if rows is None else rows.pack(outputs)

    def inspect(self, source_ids: torch.Tensor, target_input_ids: torch.Tensor) -> tuple[torch.Tensor, AttentionWeights]:
        """Teacher-forced inspection: (logits [B, T, V], AttentionWeights with cross = [weights [B, 1, T, S]])."""
        memory, mask, _ = self.encode(source_ids)
        outputs, weights = self._teacher_forced(target_input_ids, self.start_cache(memory, mask), need_weights=True)
        assert weights is not None
        return self.logits(outputs), AttentionWeights(encoder_self=[], decoder_self=[], cross=[weights[:, None]])
