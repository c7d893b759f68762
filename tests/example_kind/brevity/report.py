"""The ``brevity`` kind's report half: per backend, how many answers stopped on their own."""

from __future__ import annotations

from typing import Any

import pandas as pd

from llm_call_anatomy.reports.kinds import ReportKind
from llm_call_anatomy.reports.views import Table, h3, table


def analyse(rows: pd.DataFrame, ctx: Any, name: str) -> dict[str, Any]:
    stopped = rows.groupby("backend", sort=False)["clean"].agg(["sum", "count"]).reset_index()
    return {"stopped": stopped}


def blocks(section: Any, slots: Any, report: Any) -> list:
    t = Table(["backend", "stopped on its own"], numeric={1})
    for r in section.data["stopped"].to_dict("records"):
        t.add([r["backend"], f"{int(r['sum'])}/{int(r['count'])}"])
    return [h3("Stopped on its own"), table(t)]


KIND = ReportKind("brevity", analyse, blocks=blocks)
