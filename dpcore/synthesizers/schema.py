"""Each method's options, declared once: name, default, range or choices, and one sentence of help.

A method module declares ``OPTIONS``, a tuple of :class:`Option`; the registry
(:mod:`dpcore.synthesizers`) holds it, the method's ``resolve`` reads its defaults and checks
from it (:func:`value`), the command line builds its flags from it
(:mod:`dpcore.cli.commands`) and the Design page its widgets. So an option and its default
live in one place, and adding an option means editing its method's module only.

Options are public choices of the curator: nothing here reads data or spends budget.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dpcore.errors import OptionError, real_number, whole_number

#: kinds of option: a whole number, a real number, one of ``choices``, free text that the
#: method's resolve parses (an order, a margin list), or a number in range or the word "auto"
KINDS = ("int", "float", "choice", "text", "float_or_auto")


@dataclass(frozen=True)
class Option:
    """One option of a method.

    ``default``: the value when the curator gives none (None: worked out by the method from
    other options or the domain, as ``default_text`` says). ``low``/``high`` bound numbers
    (``low_open``/``high_open`` exclude the bound); ``choices`` are the allowed words.
    ``help`` is one sentence for the command line and the Design page; ``docs`` the docs page
    (and anchor) that explains it. ``advanced`` options are left out of the Design page's main
    controls (they stay on the command line and in the API).
    """

    name: str
    kind: str
    default: Any
    help: str
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    hint: str = ""
    default_text: str = ""
    docs: str = ""
    advanced: bool = False
    #: whether the command line offers it (a structured value such as a list of cells cannot be typed)
    cli: bool = True
    #: the curator's name for it on the Design page (the name in words when empty)
    label: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: kind must be one of {KINDS}, not {self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"option {self.name}: a choice needs its choices")

    @property
    def title(self) -> str:
        """The widget label: ``label``, or the name in words."""
        return self.label or self.name.replace("_", " ").capitalize()

    @property
    def flag(self) -> str:
        """The command-line flag: ``--one-way-share`` for ``one_way_share``."""
        return "--" + self.name.replace("_", "-")

    def check(self, given) -> Any:
        """``given`` checked against the kind and range (one line naming the option otherwise)."""
        if self.kind == "int":
            hi = None if self.high is None or math.isinf(self.high) else int(self.high)
            return whole_number(self.name, given, None if self.low is None else int(self.low), hi, self.hint)
        if self.kind == "float":
            return real_number(self.name, given, self.low, self.high, lo_open=self.low_open, hi_open=self.high_open,
                               hint=self.hint)
        if self.kind == "float_or_auto":
            return "auto" if given == "auto" else real_number(
                self.name, given, self.low, self.high, lo_open=self.low_open, hi_open=self.high_open, hint=self.hint)
        if self.kind == "choice":
            if given not in self.choices:
                raise OptionError(f"{self.name} must be one of {', '.join(map(str, self.choices))}; got {given!r}"
                                  f"{self.hint}")
            return given
        return given  # text: the method's resolve parses it

    def describe(self) -> str:
        """The help with the default (or how it is worked out) and the choices, for --help and tooltips."""
        extra = []
        if self.choices:
            extra.append(" | ".join(map(str, self.choices)))
        if self.default_text:
            extra.append(f"default: {self.default_text}")
        elif self.default is not None:
            extra.append(f"default {self.default}")
        return self.help + (f" ({'; '.join(extra)})" if extra else "")


def find(options: Iterable[Option], name: str) -> Option:
    for o in options:
        if o.name == name:
            return o
    raise KeyError(name)


def value(options: Iterable[Option], given: dict, name: str) -> Any:
    """The option ``name`` as given (checked) or its default (not checked: a default is valid by
    construction; None means the method works it out)."""
    o = find(options, name)
    if name in given and given[name] is not None:
        return o.check(given[name])
    return o.default


def check_known(options: Iterable[Option], given: dict, method: str) -> None:
    """Refuse, in one line naming them, options the method does not have."""
    known = {o.name for o in options}
    unknown = sorted(set(given) - known)
    if unknown:
        raise OptionError(f"unknown option(s) {', '.join(unknown)} for method '{method}'; allowed: "
                          f"{', '.join(sorted(known))}")


def defaults(options: Iterable[Option]) -> dict:
    """{name: default} of every option (None where the method works the default out)."""
    return {o.name: o.default for o in options}
