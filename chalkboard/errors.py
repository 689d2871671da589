"""Errors a user can act on; build.py turns each into one line and exit status 2."""


class MissingInput(Exception):
    """An input the chosen hardware or model does not provide (e.g. no rental price)."""


class NotGiven(MissingInput):
    """A workload input with no default (a measurement, an assumed efficiency) that was not given."""

    def __init__(self, message: str, name: str):
        super().__init__(message)
        self.name = name

    def __reduce__(self):   # crosses a forked process whole
        return (type(self), (str(self), self.name))


class NotApplicable(MissingInput):
    """A derived value outside its domain (e.g. a balance batch past the context crossover)."""


class InputError(Exception):
    """A bad --set override or an unknown id: one line for the user."""


class OutputError(InputError):
    """An output folder that cannot be written (a file, read-only, a full disk): one line."""


class BuildError(Exception):
    """A build that cannot finish (a failed dimension check, a figure or PDF that cannot be
    made): one line for the user."""


def short(text: str, most: int = 40) -> str:
    """A long input quoted by its first characters only, so that an error stays one short line."""
    text = str(text)
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"
