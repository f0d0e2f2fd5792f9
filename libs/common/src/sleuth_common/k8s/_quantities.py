"""Resource quantities (``k8s.io/apimachinery/pkg/api/resource``): ``256Mi``, ``500m``, ``1.5``,
``2k``, ``1e3``, exact as Decimals."""

from __future__ import annotations

import decimal
import math
import re
from decimal import ROUND_UP, Decimal

__all__ = [
    "QuantityError",
    "bytes_of",
    "cpu_millicores",
    "format_quantity",
    "parse_quantity",
    "quantity_or_none",
]

QuantityValue = str | int | float | Decimal


class QuantityError(ValueError):
    """Not a quantity the API server would accept."""


_NUMBER = re.compile(r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<suffix>[A-Za-z]*(?:[+-]?[0-9]+)?)")
_EXPONENT = re.compile(r"[eE](?P<exp>[+-]?[0-9]+)")
_MAX_EXPONENT = 1000
"""``1e1000`` is refused: no quantity comes near it, and ``int()`` of one would be slow to make."""
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_DOWN = sorted(_BINARY.items(), key=lambda kv: -kv[1])
_DECIMAL_DOWN = sorted(_DECIMAL.items(), key=lambda kv: -kv[1])


def _exact() -> decimal.Context:
    """Arithmetic that never rounds (only products and scalings are computed)."""
    return decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                           traps=[decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero])


def parse_quantity(value: QuantityValue) -> Decimal:
    """A quantity as an exact Decimal: binary suffixes ``Ki Mi Gi Ti Pi Ei`` (powers of 1024),
    decimal ``n u m k M G T P E``, exponents ``1e3``/``1E-3``; ints, floats and Decimals are taken
    as plain numbers. Surrounding spaces are ignored. Raises QuantityError otherwise (``1K`` —
    the decimal kilo is ``k`` —, ``1 Gi``, ``Mi``, ``""``, booleans, NaN, infinities)."""
    if isinstance(value, bool):
        raise QuantityError(f"not a quantity: {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"not a quantity: {value!r}")
        return Decimal(repr(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise QuantityError(f"not a quantity: {value!r}")
        return value
    if not isinstance(value, str):
        raise QuantityError(f"not a quantity: {value!r}")
    text = value.strip()
    m = _NUMBER.fullmatch(text)
    if m is None or not (m["int"] or m["frac"]):
        raise QuantityError(f"quantities must match the regular expression "
                            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}")
    number = Decimal(m["sign"] + (m["int"] or "0") + ("." + m["frac"] if m["frac"] else ""))
    suffix = m["suffix"]
    ctx = _exact()
    if suffix in _DECIMAL:
        return ctx.scaleb(number, _DECIMAL[suffix])
    if suffix in _BINARY:
        return ctx.multiply(number, Decimal(1 << _BINARY[suffix]))
    e = _EXPONENT.fullmatch(suffix)
    if e is None:
        raise QuantityError(f"unable to parse quantity's suffix: {value!r}")
    exp = int(e["exp"])
    if abs(exp) > _MAX_EXPONENT:
        raise QuantityError(f"quantity exponent out of range: {value!r}")
    return ctx.scaleb(number, exp)


def quantity_or_none(value: object) -> Decimal | None:
    """``parse_quantity``, or None for anything that is not a quantity (None included)."""
    try:
        return parse_quantity(value)  # type: ignore[arg-type]
    except QuantityError:
        return None


def _integral(d: Decimal) -> bool:
    return d == d.to_integral_value(context=_exact())


def _digits(d: Decimal) -> str:
    """Plain positional notation, no exponent, no trailing zeros after a point."""
    if _integral(d):
        return str(int(d))
    return format(d.normalize(_exact()), "f")


def format_quantity(value: QuantityValue, binary: bool = True) -> str:
    """A quantity for people, exact (``parse_quantity`` gives the same number back).

    ``binary=False`` (CPU, counts): the API server's canonical decimal form, the largest of
    ``n u m "" k M G T P E`` that leaves a whole number (0.5 → ``500m``, 2000 → ``2k``, 1500 →
    ``1500``, 0.25 → ``250m``); finer than ``1n`` keeps a fraction (``0.5n``).

    ``binary=True`` (memory, storage): a whole number also has its binary form, the largest of
    ``Ki Mi Gi Ti Pi Ei`` that divides it (268435456 → ``256Mi``, 1610612736 → ``1536Mi``), and the
    shorter of the two is given, binary on a tie (10**9 → ``1G``, not ``976562500Ki``; 1000 →
    ``1k``; 1025 → ``1025``). Fractions take the decimal form."""
    q = parse_quantity(value)
    if q == 0:
        return "0"
    ctx = _exact()
    text = ""
    for suffix, exp in _DECIMAL_DOWN:
        mantissa = ctx.scaleb(q, -exp)
        if _integral(mantissa):
            text = f"{_digits(mantissa)}{suffix}"
            break
    else:
        text = f"{_digits(ctx.scaleb(q, 9))}n"
    if binary and _integral(q):
        n = int(q)
        power, suffix = next(((p, s) for s, p in _BINARY_DOWN if n % (1 << p) == 0), (0, ""))
        binary_text = f"{n >> power}{suffix}"
        if len(binary_text) <= len(text):
            return binary_text
    return text


def _round_up(q: Decimal) -> int:
    """Away from zero, as ``Quantity.Value()``/``MilliValue()`` round."""
    return int(q.to_integral_value(rounding=ROUND_UP, context=_exact()))


def cpu_millicores(value: QuantityValue) -> int:
    """A CPU quantity in millicores (``"500m"`` → 500, ``"2"`` → 2000, ``"100u"`` → 1, rounded up
    as ``MilliValue()`` does)."""
    return _round_up(_exact().scaleb(parse_quantity(value), 3))


def bytes_of(value: QuantityValue) -> int:
    """A memory or storage quantity in bytes (``"256Mi"`` → 268435456, ``"1k"`` → 1000), fractions
    rounded up as ``Value()`` does."""
    return _round_up(parse_quantity(value))
