"""A text from a record or an env.json that holds a bidirectional control (U+202E, right-to-left override,
and its kin) is shown as its escape on the page, never raw: it would reorder the rest of its line (issue 44,
"also seen"). In the tables and prose (every value the templates print) and in the charts' data."""

from __future__ import annotations

import json
import re

from llm_call_anatomy.reports import build, fmt
from llm_call_anatomy.reports.page import json_script
from tests.reports.records import write_run
from tests.reports.test_report_capacity import KNEE, level

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE
NAME = f"chat{RLO}exe.txt"


def test_visible_writes_each_bidi_control_as_its_escape():
    assert fmt.visible(f"a{RLO}b\u2066c\u200fd") == "a\\u202eb\\u2066c\\u200fd"
    assert fmt.visible("plain · text é") == "plain · text é"
    assert not [c for c in fmt.visible(fmt.BIDI) if c in fmt.BIDI]


def test_json_script_draws_a_bidi_control_as_its_escape():
    text = str(json_script({"workload": NAME}))
    assert RLO not in text
    assert json.loads(text) == {"workload": "chat\\u202eexe.txt"}  # the six characters, drawn as such


def test_no_bidi_control_reaches_the_page_raw(tmp_path):
    rows = [r for c, ms in KNEE.items() for r in level("vllm", c, ms)]
    for r in rows:
        r["workload"] = NAME
    next(r for r in reversed(rows) if r.get("rep") is not None)["error"] = f"HTTP 500: {RLO}detaeper"
    env = {"model": {"label": f"smollm{RLO}2"}, "slo_targets": ["chat:ttft_p90_ms=500"]}
    run = write_run(tmp_path / "r", rows, env)
    page = build([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert not [c for c in page if c in fmt.BIDI]
    body = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)
    assert "chat\\u202eexe.txt" in body  # the workload name, in the tables
    assert "HTTP 500: \\u202edetaeper" in body  # the error, in the Backends table
    assert "smollm\\u202e2" in body  # the model, from env.json
    specs = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, flags=re.S)
    assert any("chat\\\\u202eexe.txt" in s for s in specs)  # the charts' data: the escape, drawn as text
