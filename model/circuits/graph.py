"""The computational graph of an encoder-decoder, as the circuits read it (a networkx ``DiGraph``).

Nodes are what writes to a residual stream, and what reads it: each side's embeddings (token and position together),
each head of each attention, each feed-forward block, and the logits. An edge runs from a node that writes to a stream
to a node that reads that stream later in the pass: within the encoder; within the decoder (its self-attention heads,
its cross-attention heads' queries, its feed-forward blocks, the logits); and across, from every encoder node to each
cross-attention head's keys and values (the memory). So a cross-attention head has two inputs: its **query** side (the
decoder's stream, ``input="q"``) and its **key/value** side (the encoder's output, ``input="kv"``); a self-attention
head has one (its queries, keys and values read the same stream, ``input="qkv"``).

The receivers of one hook location (the heads of one attention on one input side, a feed-forward block, the logits)
form a ``ReceiverGroup``: they read a prefix of their stream's writers, in the order the pass writes them, and the
group holds each edge's index in ``edges`` ([heads or 1, writers]) so that a pass can patch a whole batch of edge sets
at once (model/circuits/edge_pass.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from model.interventions.circuit_parts import CircuitParts

STREAMS = ("encoder", "decoder")


@dataclass(frozen=True)
class Node:
    """One node: ``kind`` "embed", "self", "cross", "mlp" or "logits"; ``layer`` and ``head`` from 0 where it has them."""

    name: str  # "encoder.embed", "encoder.1.self.3", "decoder.2.cross.0", "decoder.0.mlp", "logits"
    side: str  # "encoder", "decoder" (the logits: "decoder")
    kind: str
    layer: int | None = None
    head: int | None = None

    @property
    def label(self) -> str:
        """As people count (from 1): "source embedding", "E2 H4" (encoder self-attention), "D3 S1" (decoder
        self-attention), "D3 X2" (cross-attention), "E1 FFN", "target embedding", "logits"."""
        if self.kind == "embed":
            return "source embedding" if self.side == "encoder" else "target embedding"
        if self.kind == "logits":
            return "logits"
        layer = f"{'E' if self.side == 'encoder' else 'D'}{(self.layer or 0) + 1}"
        if self.kind == "mlp":
            return f"{layer} FFN"
        letter = {"self": "H" if self.side == "encoder" else "S", "cross": "X"}[self.kind]
        return f"{layer} {letter}{(self.head or 0) + 1}"


@dataclass(frozen=True)
class Edge:
    sender: str  # a node's name
    receiver: str
    input: str  # what of the receiver it feeds: "qkv" (a self-attention head), "q" or "kv" (a cross-attention head),
    # "in" (a feed-forward block, the logits)
    position: int | None = None  # a key/value edge split by source position: the one it carries (from 0)

    @property
    def name(self) -> str:
        where = "" if self.position is None else f" @ source {self.position + 1}"
        side = f" ({self.input}{where})" if self.input in ("q", "kv") else ""
        return f"{self.sender} → {self.receiver}{side}"


@dataclass(frozen=True)
class ReceiverGroup:
    """The receivers of one hook location: ``part`` "self", "cross_q", "cross_kv", "mlp" or "logits"."""

    side: str
    layer: int | None
    part: str
    stream: str  # the stream whose writers it reads: "encoder" or "decoder"
    edge_index: np.ndarray  # [heads or 1, writers read] (or [..., source positions], split): each edge's index in edges

    @property
    def n_senders(self) -> int:
        return int(self.edge_index.shape[1])


class CircuitGraph:
    """Every node and edge of one network's graph (``build_graph``), and the networkx graph of them (a
    ``MultiDiGraph``: a key/value edge split by source position is one edge per position)."""

    def __init__(self, parts: CircuitParts, source_positions: int | None = None) -> None:
        self.parts = parts
        self.source_positions = source_positions  # the key/value edges split into this many, or None
        self.writers: dict[str, list[Node]] = {stream: [] for stream in STREAMS}  # in the order the pass writes them
        self.nodes: dict[str, Node] = {}
        self.edges: list[Edge] = []
        self.groups: dict[tuple[str, int | None, str], ReceiverGroup] = {}
        self._build()
        self.graph = self._networkx()

    @property
    def senders(self) -> list[Node]:
        """Every writer: the encoder's, then the decoder's."""
        return self.writers["encoder"] + self.writers["decoder"]

    def _add(self, node: Node, writes: str | None) -> Node:
        self.nodes[node.name] = node
        if writes is not None:
            self.writers[writes].append(node)
        return node

    def _receive(self, side: str, layer: int | None, part: str, stream: str, receivers: list[Node], input_name: str) -> None:
        """Edges from every writer of ``stream`` so far into each of ``receivers`` (one group)."""
        writers = self.writers[stream]
        split = input_name == "kv" and self.source_positions is not None
        positions: list[int | None] = list(range(self.source_positions or 0)) if split else [None]
        index = np.empty((len(receivers), len(writers), len(positions)), dtype=np.int64)
        for row, receiver in enumerate(receivers):
            for column, writer in enumerate(writers):
                for place, position in enumerate(positions):
                    index[row, column, place] = len(self.edges)
                    self.edges.append(Edge(writer.name, receiver.name, input_name, position))
        self.groups[(side, layer, part)] = ReceiverGroup(side, layer, part, stream, index if split else index[..., 0])

    def _heads(self, side: str, layer: int, kind: str) -> list[Node]:
        return [Node(f"{side}.{layer}.{kind}.{head}", side, kind, layer, head) for head in range(self.parts.n_heads)]

    def _attention(self, side: str, layer: int, kind: str, inputs: tuple[tuple[str, str, str], ...]) -> None:
        """One attention's heads: the edges into each of their ``inputs`` (group part, stream read, input), then the heads
        as writers of their side's stream."""
        heads = self._heads(side, layer, kind)
        for part, stream, input_name in inputs:
            self._receive(side, layer, part, stream, heads, input_name)
        for head in heads:
            self._add(head, side)

    def _feed_forward(self, side: str, layer: int) -> None:
        mlp = Node(f"{side}.{layer}.mlp", side, "mlp", layer)
        self._receive(side, layer, "mlp", side, [mlp], "in")
        self._add(mlp, side)

    def _build(self) -> None:
        """Every node in the order the pass writes it, each receiver's edges added before it writes."""
        parts = self.parts
        self._add(Node("encoder.embed", "encoder", "embed"), "encoder")
        for layer in range(parts.n_encoder_layers):
            self._attention("encoder", layer, "self", (("self", "encoder", "qkv"),))
            self._feed_forward("encoder", layer)
        self._add(Node("decoder.embed", "decoder", "embed"), "decoder")
        for layer in range(parts.n_decoder_layers):
            self._attention("decoder", layer, "self", (("self", "decoder", "qkv"),))
            self._attention("decoder", layer, "cross", (("cross_q", "decoder", "q"), ("cross_kv", "encoder", "kv")))
            self._feed_forward("decoder", layer)
        logits = self._add(Node("logits", "decoder", "logits"), None)
        self._receive("decoder", None, "logits", "decoder", [logits], "in")

    def _networkx(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph()
        for node in self.nodes.values():
            graph.add_node(
                node.name, label=node.label, side=node.side, kind=node.kind, layer=_or_minus(node.layer), head=_or_minus(node.head)
            )
        for index, edge in enumerate(self.edges):
            graph.add_edge(edge.sender, edge.receiver, key=index, input=edge.input, position=_or_minus(edge.position), index=index)
        return graph

    def group_edges(self) -> dict[tuple[str, int | None, str], np.ndarray]:
        """Each group's edge indices [heads or 1, writers]."""
        return {key: group.edge_index for key, group in self.groups.items()}

    def connected(self, chosen: np.ndarray) -> np.ndarray:
        """The edges of ``chosen`` (a boolean [edges]) that lie on a path from an embedding to the logits through
        chosen edges only: an edge off every such path carries nothing to the prediction."""
        sub = nx.DiGraph()
        sub.add_nodes_from(self.graph.nodes)
        for index in np.flatnonzero(chosen):
            edge = self.edges[index]
            sub.add_edge(edge.sender, edge.receiver)
        reach = nx.descendants(sub, "encoder.embed") | nx.descendants(sub, "decoder.embed") | {"encoder.embed", "decoder.embed"}
        feeds = nx.ancestors(sub, "logits") | {"logits"}
        keep = chosen.copy()
        for index in np.flatnonzero(chosen):
            edge = self.edges[index]
            keep[index] = edge.sender in reach and edge.receiver in feeds
        return keep


def _or_minus(value: int | None) -> int:
    """GraphML has no None: −1 for a node without a layer or head."""
    return -1 if value is None else value


def build_graph(parts: CircuitParts, source_positions: int | None = None) -> CircuitGraph:
    """The graph of a network of these parts; ``source_positions``: its key/value edges split into one per source
    position (which source piece a cross-attention head reads through which writer), for a source of that length."""
    return CircuitGraph(parts, source_positions)
