"""Resource quantities: parsed exactly, printed for people, converted to millicores and bytes."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sleuth_common.k8s import (
    QuantityError,
    bytes_of,
    cpu_millicores,
    format_quantity,
    parse_quantity,
    quantity_or_none,
)


@dataclass(frozen=True)
class Case:
    text: str | int | float | Decimal
    value: Decimal
    binary: str
    decimal: str
    millicores: int
    bytes: int


CASES = [
    Case("256Mi", Decimal(268435456), "256Mi", "268435456", 268435456000, 268435456),
    Case("1Gi", Decimal(2**30), "1Gi", "1073741824", 2**30 * 1000, 2**30),
    Case("1.5Gi", Decimal(1610612736), "1536Mi", "1610612736", 1610612736000, 1610612736),
    Case("1Ki", Decimal(1024), "1Ki", "1024", 1024000, 1024),
    Case("2Ei", Decimal(2**61), "2Ei", str(2**61), 2**61 * 1000, 2**61),
    Case("500m", Decimal("0.5"), "500m", "500m", 500, 1),
    Case("2", Decimal(2), "2", "2", 2000, 2),
    Case("0.25", Decimal("0.25"), "250m", "250m", 250, 1),
    Case(".5", Decimal("0.5"), "500m", "500m", 500, 1),
    Case("1.", Decimal(1), "1", "1", 1000, 1),
    Case("100u", Decimal("0.0001"), "100u", "100u", 1, 1),
    Case("5n", Decimal("5e-9"), "5n", "5n", 1, 1),
    Case("12k", Decimal(12000), "12k", "12k", 12000000, 12000),
    Case("1M", Decimal(10**6), "1M", "1M", 10**9, 10**6),
    Case("1G", Decimal(10**9), "1G", "1G", 10**12, 10**9),
    Case("3T", Decimal(3 * 10**12), "3T", "3T", 3 * 10**15, 3 * 10**12),
    Case("1P", Decimal(10**15), "1P", "1P", 10**18, 10**15),
    Case("1E", Decimal(10**18), "1E", "1E", 10**21, 10**18),
    Case("1e3", Decimal(1000), "1k", "1k", 10**6, 1000),
    Case("1E3", Decimal(1000), "1k", "1k", 10**6, 1000),
    Case("1.5e+3", Decimal(1500), "1500", "1500", 1500000, 1500),
    Case("25e-3", Decimal("0.025"), "25m", "25m", 25, 1),
    Case("1025", Decimal(1025), "1025", "1025", 1025000, 1025),
    Case("2048", Decimal(2048), "2Ki", "2048", 2048000, 2048),
    Case("-1Ki", Decimal(-1024), "-1Ki", "-1024", -1024000, -1024),
    Case("+3", Decimal(3), "3", "3", 3000, 3),
    Case(" 64Mi ", Decimal(64 * 2**20), "64Mi", "67108864", 64 * 2**20 * 1000, 64 * 2**20),
    Case("0", Decimal(0), "0", "0", 0, 0),
    Case("0Gi", Decimal(0), "0", "0", 0, 0),
    Case(268435456, Decimal(268435456), "256Mi", "268435456", 268435456000, 268435456),
    Case(0.5, Decimal("0.5"), "500m", "500m", 500, 1),
    Case(Decimal("1.5"), Decimal("1.5"), "1500m", "1500m", 1500, 2),
    Case("0.1n", Decimal("1e-10"), "0.1n", "0.1n", 1, 1),
]


@pytest.mark.parametrize("case", CASES, ids=[repr(c.text) for c in CASES])
def test_quantities(case: Case) -> None:
    q = parse_quantity(case.text)
    assert q == case.value
    assert format_quantity(q) == case.binary
    assert format_quantity(case.text, binary=False) == case.decimal
    assert cpu_millicores(case.text) == case.millicores
    assert bytes_of(case.text) == case.bytes
    assert parse_quantity(case.binary) == parse_quantity(case.decimal) == q


BAD = ["", " ", "bogus", "Mi", "1K", "1 Gi", "1Gb", "1e", "1e3.5", ".", "+", "-", "1.5.5", "1m3", "0x10", "1,5",
       "1e1001", "nan", "inf", "1__0"]


@pytest.mark.parametrize("text", BAD)
def test_bad_quantities_are_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)
    assert quantity_or_none(text) is None


@pytest.mark.parametrize("value", [True, None, float("nan"), float("inf"), Decimal("NaN"), [1]])
def test_non_quantities_are_refused(value: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(value)  # type: ignore[arg-type]
    assert quantity_or_none(value) is None


def test_human_output_prefers_the_shorter_exact_form() -> None:
    assert format_quantity(10**9) == "1G"  # not 976562500Ki
    assert format_quantity(1000) == "1k"
    assert format_quantity(2**70) == "1024Ei"
    assert format_quantity(1024 * 1000) == "1024k"  # shorter than 1000Ki
    assert format_quantity(9875 * 1024) == "9875Ki"  # as long as 10112k: a tie goes to the binary form
    assert format_quantity("1500m", binary=False) == "1500m"


# -- properties --------------------------------------------------------------------------------

_suffix = st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
_texts = st.builds(lambda n, frac, s: f"{n}{'.' + frac if frac else ''}{s}", st.integers(-(10**6), 10**6),
                   st.from_regex(r"[0-9]{0,4}", fullmatch=True), _suffix)
_decimals = st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**30), max_value=10**30, places=12)


@given(st.one_of(_texts, _decimals, st.integers(-(2**80), 2**80)), st.booleans())
def test_format_then_parse_gives_the_same_number(value: str | Decimal | int, binary: bool) -> None:
    q = parse_quantity(value)
    assert parse_quantity(format_quantity(q, binary=binary)) == q


@given(st.integers(-(10**9), 10**9), _suffix)
def test_whole_suffixed_numbers_never_print_longer(n: int, suffix: str) -> None:
    text = f"{n}{suffix}"
    printed = format_quantity(text, binary=suffix.endswith("i"))
    assert parse_quantity(printed) == parse_quantity(text)
    assert len(printed) <= len(text)


@given(_texts)
def test_millicores_and_bytes_round_up(text: str) -> None:
    q = parse_quantity(text)
    millicores, whole = cpu_millicores(text), bytes_of(text)
    with localcontext() as exact:  # compare exactly: the default 28 digits would round huge values
        exact.prec = 400
        milli = q * 1000
        assert abs(millicores) >= abs(milli) and abs(millicores - milli) < 1  # away from zero
        assert abs(whole) >= abs(q) and abs(whole - q) < 1
