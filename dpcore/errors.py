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
