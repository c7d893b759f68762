"""The trace kind's prompts, as token ids: one block of ``block_size`` ids per hash id, so that every engine's
prefix cache sees exactly the trace's reuse.

    blocks = TraceBlocks(renderer, block_size=512)
    ids = blocks.prompt(hash_ids=(0, 1, 7), input_length=1300, request=42)

- **The same hash id is always the same block**: its ids are drawn from a generator seeded by (a fixed seed,
  the hash id), over the model's vocabulary less its special and added tokens (as the load kind's fixed
  prompts are, ``workloads/load/prompts.py``).
- **Different ids never share a prefix by accident**: a block's first two ids spell its hash id in the
  allowed vocabulary (base A, A ≈ the vocabulary: every id below A² gets its own pair), so two blocks of
  different ids differ at their first or second token. Two requests thus share exactly their common leading
  run of hash ids x ``block_size`` tokens (plus at most one token, where two ids differ only above A).
- **The last block** is cut to fill the prompt to ``input_length``; a prompt longer than its hash ids' blocks
  (or a trace with no hash ids) is filled with ids drawn for that request alone (seeded by its index).
"""

from __future__ import annotations

import numpy as np

from llm_call_anatomy.contract.chat import Renderer, common_prefix_len

BLOCK_SEED = 41
FILL_SEED = 43


class TraceBlocks:
    """Every hash id's block of token ids, drawn once per plan."""

    def __init__(self, renderer: Renderer, block_size: int) -> None:
        tok = renderer.tokenizer
        special = set(tok.all_special_ids) | {int(i) for i in getattr(tok, "added_tokens_decoder", {})}
        self.allowed = np.array([i for i in range(len(tok)) if i not in special], dtype=np.int64)
        self.size = block_size
        self.cache: dict[int, list[int]] = {}

    def _spell(self, n: int) -> list[int]:
        a = len(self.allowed)
        return [int(self.allowed[n % a]), int(self.allowed[(n // a) % a])]

    def _draw(self, seed: int, key: int, n: int) -> list[int]:
        rng = np.random.default_rng([seed, key])
        return [int(i) for i in self.allowed[rng.integers(0, len(self.allowed), size=max(n, 0))]]

    def block(self, hash_id: int) -> list[int]:
        """The ``block_size`` token ids hash id ``hash_id`` stands for."""
        have = self.cache.get(hash_id)
        if have is None:
            head = self._spell(hash_id)[: self.size]
            have = self.cache[hash_id] = head + self._draw(BLOCK_SEED, hash_id, self.size - len(head))
        return have

    def prompt(self, hash_ids: tuple[int, ...] | list[int], input_length: int, request: int) -> list[int]:
        """``input_length`` token ids: the blocks of ``hash_ids`` in order, the last one cut, then (where the
        blocks fall short) ids of this request alone."""
        ids: list[int] = []
        for h in hash_ids:
            if len(ids) >= input_length:
                break
            ids += self.block(h)
        if len(ids) < input_length:
            ids += self._draw(FILL_SEED, request, input_length - len(ids))
        return ids[:input_length]


def reused_prefix_blocks(requests: list[tuple[int, ...]]) -> list[int]:
    """Per request, its leading hash ids that an earlier request of ``requests`` had too, at the same place
    (what an unbounded prefix cache can reuse, in blocks)."""
    nodes: dict[
        tuple[int, int], int
    ] = {}  # (the prefix's node, next hash id) -> node: a trie of the prefixes
    out = []
    for ids in requests:
        node, n, known = 0, 0, True
        for h in ids:
            child = nodes.get((node, h))
            if child is None:
                known = False
                child = nodes[(node, h)] = len(nodes) + 1
            n += known
            node = child
        out.append(n)
    return out


CHUNK = 16  # tokens a node of :func:`reused_prefix_tokens`'s prefix index stands for


def reused_prefix_tokens(prompts: list[list[int]]) -> list[int]:
    """Per prompt, the longest run of leading tokens it shares with an earlier prompt of ``prompts`` (what an
    unbounded prefix cache can reuse for it, in tokens): the transcript form's measure, whose prompts are
    rendered messages, not blocks. Exact, in time linear in the tokens: the prefixes of every whole
    ``CHUNK`` of tokens are kept as chained hashes, each with the distinct tails seen after it."""
    tails: dict[int, set[tuple[int, ...]]] = {0: set()}  # prefix (chained hash) -> the next chunks seen
    out = []
    for ids in prompts:
        h, n, known = 0, 0, True
        for at in range(0, len(ids), CHUNK):
            chunk = tuple(ids[at : at + CHUNK])
            if known:
                seen = tails.get(h, set())
                if chunk in seen and len(chunk) == CHUNK:
                    n = at + CHUNK
                else:
                    n = at + max((common_prefix_len(chunk, t) for t in seen), default=0)
                    known = False
            tails.setdefault(h, set()).add(chunk)
            h = hash((h, chunk))
        out.append(n)
    return out
