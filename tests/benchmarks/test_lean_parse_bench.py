"""benchmarks/lean_parse.py: a row per installed JSON library, parsing the stream it fabricates to the end;
bad input exits 2 before anything runs."""

from __future__ import annotations

import pytest

from benchmarks import lean_parse
from llm_call_anatomy.backends.base import TokenClock
from llm_call_anatomy.backends.openai.json_codec import available
from llm_call_anatomy.backends.openai.lean_stream import ChunkReader

pytestmark = pytest.mark.openai


def test_a_row_per_library_and_the_fabricated_stream_parses_whole(capsys) -> None:
    assert lean_parse.main(["--tokens", "8", "--prompt-tokens", "16", "--repeats", "1"]) == 0
    rows = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "µs" not in line
    ]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows] == [c.name for c in available()]
    reader = ChunkReader(TokenClock(lambda: None))
    assert any(reader.feed(data, 0.0) for data in lean_parse.stream_reads(8))  # it reaches [DONE]
    out = reader.output()
    assert out.finish_reason == "length" and out.reported_output_tokens == 8 and len(reader.clock.stamps) == 8


@pytest.mark.parametrize("bad", [["--tokens", "0"], ["--repeats", "0"], ["--tokens", "x"]])
def test_bad_input_exits_2(bad, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        lean_parse.main(bad)
    assert exc.value.code == 2 and capsys.readouterr().err.strip()
