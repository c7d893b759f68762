"""The Load section's names for figures that exist twice, over the whole level and over its steady window,
and for the energy figures (issue 40): one name a figure, one definition a name, said once on the page.

The page's tables, the exports (which take the page's tables by the page's column names), the terminal
summary and the README tables (``load_table``) use these names, never a bare "tok/s" for one of them.
"""

from __future__ import annotations

LEVEL_TPS = "output tok/s (whole level)"
STEADY_TPS = "output tok/s (steady window)"
STEADY_J = "J per 1k output tok (steady window)"
LEVEL_J = "J per 1k output tok (whole level)"
IDLE_W = "idle floor W"
ABOVE_IDLE = "window energy above idle floor"

# each name's definition (the page says each once: the whole level's in the every-request half, the steady
# window's and the energy's in the capacity half)
LEVEL_TPS_TEXT = (
    f"{LEVEL_TPS} = output tokens of the level's served requests ÷ the level's window (its first submit to "
    "its last finish, the first wave and the drain included)"
)
STEADY_TPS_TEXT = (
    f"{STEADY_TPS} = output tokens that arrived in the steady window (the first submit after the first wave "
    "to the last submit), any request's that did not fail, ÷ the window's length"
)
STEADY_J_TEXT = (
    f"{STEADY_J} = the GPU's energy between the steady window's two ends (NVML's energy counter read along "
    "the level on the records' clock, interpolated at each end) ÷ the output tokens that arrived in the "
    f"window (those {STEADY_TPS} counts) × 1000"
)
IDLE_TEXT = (
    f"{IDLE_W} = the GPU's power with no request in flight, measured for about a second before the level's "
    f"first request; {ABOVE_IDLE} = 1 − idle floor × window length ÷ the window's energy"
)
LEVEL_J_TEXT = (
    f"{LEVEL_J} (runs recorded before the energy series was kept) = the GPU's energy over the whole level, "
    "first wave and drain included, ÷ the output tokens of its requests that did not fail × 1000: not "
    "comparable with a steady window's figure"
)
