"""One SLO grammar (issue 40's first bullet, issue 44 item 5): printing and parsing round-trip exactly (a
seeded property loop), percentiles in exponent form or past 3 decimals are refused up front (exit 2, one
line, from compare.py and ``python compare.py report`` alike), and an unnamed target takes the stated default
name."""

from __future__ import annotations

import random

import pytest

from llm_call_anatomy.contract.slo import DEFAULT_NAME, METRICS, Limit, Target, parse_target, parse_targets


def random_percentile(rng: random.Random) -> str:
    whole = rng.choice(["100", str(rng.randint(0, 99)), "0"])
    if whole == "100":
        return whole
    decimals = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, 3))).rstrip("0")
    if whole == "0" and not decimals:
        decimals = "5"
    return f"{whole}.{decimals}" if decimals else whole


def random_ms(rng: random.Random) -> str:
    value = rng.choice([rng.randint(1, 10**9), rng.uniform(0.001, 1e6), rng.randint(1, 5000) / 8])
    return repr(float(value)).removesuffix(".0") if "e" not in repr(float(value)) else str(int(value))


def random_text(rng: random.Random) -> str:
    name = rng.choice("abcXY") + "".join(rng.choice("ab9_-") for _ in range(rng.randint(0, 6)))
    keys = {f"{rng.choice(list(METRICS))}_p{random_percentile(rng)}_ms" for _ in range(rng.randint(0, 4))}
    return f"{name}:" + ",".join(f"{k}={random_ms(rng)}" for k in sorted(keys))


def test_print_of_parse_is_the_text_and_parse_of_print_the_target():
    rng = random.Random(44)
    for _ in range(3000):
        text = random_text(rng)
        target = parse_target(text)
        assert str(target) == target.spec() == text
        assert parse_target(str(target)) == target


def test_every_float_limit_prints_back_to_itself():
    rng = random.Random(40)
    for _ in range(3000):
        p = round(rng.uniform(0.001, 100), rng.randint(0, 3)) or 0.5
        t = Target("t", (Limit("ttft", p, rng.choice([rng.uniform(0.001, 1e9), 1e9, 0.001, 1234567.0])),))
        assert parse_target(t.spec()) == t
        assert "e" not in t.spec().split(":")[1].replace("e2e", "")  # never an exponent form


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("t:ttft_p0.00001_ms=650", "percentile '0.00001' in 'ttft_p0.00001_ms' is not a decimal"),
        ("t:ttft_p1e-05_ms=650", "percentile '1e-05'"),
        ("t:ttft_p99.99999_ms=650", "at most 3 decimals"),
        ("t:ttft_p100.001_ms=650", "outside (0, 100]"),
        ("t:ttft_p0.000_ms=650", "outside (0, 100]"),
        ("t:ttft_pnan_ms=650", "percentile 'nan'"),
        ("t:ttft_p90_ms=nan", "must be a positive number"),
        ("t:ttft_p90_ms=1e400", "must be a positive number"),
        ("t:ttft_p90_ms=1e12", "outside 0.001 .. 1000000000 ms"),
        ("ttft_ms=1,ttft_p90_ms=2", "do not mix"),
    ],
)
def test_unrepresentable_targets_are_refused(text, said):
    with pytest.raises(ValueError) as err:
        parse_target(text)
    assert said in str(err.value) and "\n" not in str(err.value)


def test_an_unnamed_target_takes_the_default_name_and_several_are_given_at_once():
    t = parse_target("ttft_p90_ms=1000")
    assert t == Target(DEFAULT_NAME, (Limit("ttft", 90.0, 1000.0),)) and t.spec() == "custom:ttft_p90_ms=1000"
    targets = parse_targets(["mychat:ttft_p90_ms=1000,tpot_p90_ms=40,e2e_p99_ms=9000", "batch:"])
    assert [str(t) for t in targets] == ["mychat:ttft_p90_ms=1000,tpot_p90_ms=40,e2e_p99_ms=9000", "batch:"]
    assert parse_target("ttft_ms=2000,tpot_ms=200").spec() == "custom:ttft_p90_ms=2000,tpot_p90_ms=200"


@pytest.mark.parametrize("slo", ["t:ttft_p0.00001_ms=650", "t:ttft_p99.99999_ms=650"])
def test_compare_and_the_report_refuse_them_up_front(slo, tmp_path, capsys):
    from llm_call_anatomy.harness.cli import main as compare_main
    from llm_call_anatomy.reports.__main__ import main as report_main

    out = tmp_path / "run"
    assert compare_main(["--backend", "hf", "--workloads", "load", "--slo", slo, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compare.py: error: --slo") and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    with pytest.raises(SystemExit) as exit_:
        report_main([str(tmp_path), "--slo", slo])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "percentile" in err.strip().splitlines()[-1], err


def test_the_report_takes_an_unnamed_ttft_only_target(monkeypatch, tmp_path):
    """``python compare.py report RUNS --slo ttft_p90_ms=1000``: accepted (the grammar's default name), the
    goodput pair keeping the page's default TPOT."""
    import llm_call_anatomy.reports.__main__ as cli

    seen = {}
    monkeypatch.setattr(cli, "report_of", lambda dirs, **kw: seen.update(kw) or object())
    monkeypatch.setattr(cli, "write", lambda report, out, formats: [out])
    assert cli.main([str(tmp_path), "--slo", "ttft_p90_ms=1000"]) == 0
    assert seen["slo"] == {"ttft_ms": 1000.0}


def test_every_committed_runs_targets_read_and_print_as_written():
    """Old runs stay readable: each env.json's ``slo_targets`` parses and prints back as it was written."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    seen = 0
    for path in [*root.glob("lab/examples/**/env.json"), *root.glob("tests/**/env.json")]:
        specs = json.loads(path.read_text()).get("slo_targets")
        if specs:
            assert [t.spec() for t in parse_targets(specs)] == specs, path
            seen += 1
    assert seen
