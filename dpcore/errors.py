"""Errors a curator can act on.

Every error raised for bad input is a :class:`DPCoreError` whose message names the
column or option at fault and says what to do. The CLI prints the message on one
line and exits with status 2; the app shows it with ``st.error``.
"""


class DPCoreError(ValueError):
    """Base class: a problem with the input or options, explained for the curator."""


class InputError(DPCoreError):
    """The table itself cannot be read or used (malformed file, bad column)."""


class DomainError(DPCoreError):
    """The declared public domain does not fit the data, or cannot be built."""


class OptionError(DPCoreError):
    """A release option is out of range or inconsistent with the others."""


class ResourceError(DPCoreError):
    """The requested release would not fit in memory on this machine."""


def whole_number(name: str, value, lo: int | None = None, hi: int | None = None, hint: str = "") -> int:
    """``value`` as an int, or an :class:`OptionError` naming ``name``.

    Accepts Python and numpy integers and integral floats (2.0); rejects booleans,
    strings, fractions, NaN and infinities, so nothing is silently coerced.
    """
    import numbers

    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        try:
            ok = float(value).is_integer() if not isinstance(value, numbers.Integral) else True
        except (OverflowError, ValueError):
            ok = False
    rng = ("" if lo is None and hi is None else
           f" ≥ {lo}" if hi is None else f" from {lo} to {hi}" if lo is not None else f" ≤ {hi}")
    if not ok:
        raise OptionError(f"{name} must be a whole number{rng}; got {value!r}{hint}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise OptionError(f"{name} must be a whole number{rng}; got {value!r}{hint}")
    return v


def real_number(name: str, value, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                hi_open: bool = False, hint: str = "") -> float:
    """``value`` as a finite float in the stated range, or an :class:`OptionError` naming
    ``name``. Booleans and strings are refused: nothing is silently coerced."""
    import math
    import numbers

    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    x = float(value) if ok else math.nan
    ok = ok and math.isfinite(x)
    if ok and lo is not None:
        ok = x > lo if lo_open else x >= lo
    if ok and hi is not None:
        ok = x < hi if hi_open else x <= hi
    if not ok:
        lo_s = "" if lo is None else f"{'>' if lo_open else '≥'} {lo:g}"
        hi_s = "" if hi is None else f"{'<' if hi_open else '≤'} {hi:g}"
        rng = " and ".join(p for p in (lo_s, hi_s) if p)
        raise OptionError(f"{name} must be a finite number{(' ' + rng) if rng else ''}; got {value!r}{hint}")
    return x
