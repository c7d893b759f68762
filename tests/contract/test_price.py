"""``--gpu-hour-usd``: one price or a range ``LO-HI`` (``contract.price``), read the same by ``compare.py``
and ``python compare.py report``; a mistake is exit 2 on both command lines (issue 40: "at $2.50–7.00 per
GPU-hour")."""

from __future__ import annotations

import json

import pytest

from llm_call_anatomy.contract.price import GpuPrice, parse_price, price_from

BAD = ["abc", "0", "-1", "nan", "inf", "0-7", "7-2.5", "2.5-", "-7", "2.5-7-9", "$3"]


@pytest.mark.parametrize(
    "text,price",
    [
        ("3.5", GpuPrice(3.5, 3.5)),
        ("2.5-7", GpuPrice(2.5, 7.0)),
        (" 2.50 – 7.00 ", GpuPrice(2.5, 7.0)),  # the page's dash reads back
        ("3.5-3.5", GpuPrice(3.5, 3.5)),  # equal ends: the one price
        (".5-1", GpuPrice(0.5, 1.0)),
    ],
)
def test_a_price_or_a_range_is_read(text, price):
    got = parse_price(text)
    assert got == price
    assert parse_price(got.spec()) == got  # printing and parsing round-trip


def test_one_price_has_one_end_and_a_range_two():
    one, two = parse_price("3.5"), parse_price("2.5-7")
    assert (one.ends, one.is_range, one.text(), one.spec()) == ((3.5,), False, "$3.50", "3.5")
    assert (two.ends, two.is_range, two.text(), two.spec()) == ((2.5, 7.0), True, "$2.50–7.00", "2.5-7")


@pytest.mark.parametrize("text", BAD)
def test_a_bad_price_is_one_line_naming_the_flag(text):
    with pytest.raises(ValueError) as exc:
        parse_price(text)
    assert str(exc.value).startswith("--gpu-hour-usd") and "\n" not in str(exc.value)


def test_env_json_keeps_one_price_as_a_number_and_a_range_as_two():
    assert parse_price("3.5").recorded() == 3.5  # as every run recorded before ranges
    assert json.loads(json.dumps(parse_price("2.5-7").recorded())) == [2.5, 7.0]
    assert price_from(3.5) == GpuPrice(3.5, 3.5) and price_from([2.5, 7.0]) == GpuPrice(2.5, 7.0)
    for nothing in (None, 0, -1.0, float("nan"), True, [7.0, 2.5], [1.0], "abc", {"lo": 1}):
        assert price_from(nothing) is None


@pytest.mark.parametrize("text,price", [("3.5", GpuPrice(3.5, 3.5)), ("2.5-7", GpuPrice(2.5, 7.0))])
def test_the_reports_command_line_takes_a_price_or_a_range(text, price):
    from llm_call_anatomy.reports.__main__ import gpu_price

    assert gpu_price(text) == price


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_price_is_exit_2_on_the_reports_command_line(tmp_path, bad, capsys):
    from llm_call_anatomy.reports.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path), f"--gpu-hour-usd={bad}"])
    assert exc.value.code == 2 and "--gpu-hour-usd" in capsys.readouterr().err


def test_compare_py_keeps_one_price_as_a_number_and_a_range_as_two():
    from llm_call_anatomy.harness.cli_parser import parser

    def read(text):
        return parser().parse_args(["--gpu-hour-usd", text]).gpu_hour_usd

    assert read("3.5") == 3.5 and isinstance(read("3.5"), float)  # as before ranges
    assert read("2.5-7") == [2.5, 7.0] and read("3.5-3.5") == 3.5


@pytest.mark.parametrize("bad", ["abc", "0-7", "7-2.5", "2.5-", "$3"])
def test_a_bad_range_is_an_argparse_error_on_compare_py(bad, capsys):
    from llm_call_anatomy.harness.cli_parser import parser

    with pytest.raises(SystemExit) as exc:
        parser().parse_args([f"--gpu-hour-usd={bad}"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "argument --gpu-hour-usd: --gpu-hour-usd" in err
