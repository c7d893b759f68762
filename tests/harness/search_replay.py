"""The capacity search's rule replayed on what a run judged: the end-to-end search tests' shared check.

Where the added levels land depends on the machine's timing (a loaded one may not offer the lowest planned
rate on time, and the search then goes below it), so those tests do not name the levels; they check that each
added level is the one ``contract.capacity.choose`` picks from the levels judged before it, in the order their
level records were written, as ``harness.load_search`` does for an open loop.
"""

from __future__ import annotations

import pytest

from llm_call_anatomy.contract import capacity as cap
from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.slo import Target


def replay_open_search(target: Target, judged_in_order: list[tuple[float, LevelFacts, str]]) -> dict:
    """``judged_in_order``: (rate, its level's facts, its decision) in the order the levels were written.
    Asserts that no level was extended (the tests' margins leave none undecided) and that each added level is
    the rule's pick from those before it; returns rate -> decision."""
    seen: dict[float, str] = {}
    for x, facts, decision in judged_in_order:
        assert not facts.extended, "the wide margins leave no level undecided"
        if facts.searched_for:
            ratio = facts.search_ratio or cap.DEFAULT_RATIO
            picked = cap.choose((target,), {target.name: seen}, False, facts.search_ceiling, set(seen), ratio)
            assert picked is not None and picked[1] == pytest.approx(x), (x, seen)
        seen[x] = decision
    return seen
