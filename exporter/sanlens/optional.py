"""What a command needs beyond `pip install sanlens`, and the error that says how to get it.

The product's core dependencies are what `serve` runs on (the image installs nothing else).
`analyze` needs the `analyze` extra (numpy, pyarrow, tqdm); `demo` and `simulate` need the
simulator, a distribution of its own (sim/). Without them a command exits 2 with the install
command on its error line, not an import traceback.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from sanlens.errors import UsageError


@dataclass(frozen=True)
class Part:
    """The top-level modules a part provides, and the command that installs them."""

    what: str
    modules: tuple[str, ...]
    install: str


ANALYZE = Part(
    "the analyze extra (numpy, pyarrow, tqdm)",
    ("numpy", "pyarrow", "tqdm"),
    "pip install '.[analyze]' from a sanlens checkout (docs/capture.md)",
)
SIMULATOR = Part(
    "the simulator (sanlens-sim)",
    ("sanlens_sim",),
    "pip install . ./sim from a sanlens checkout (make venv does)",
)


class MissingPart(UsageError):
    """A command's optional part is not installed: exit 2, naming how to install it."""

    def __init__(self, command: str, part: Part) -> None:
        super().__init__(
            f"sanlens {command} needs {part.what}, which is not installed: {part.install}",
            hint="the container image and a plain `pip install sanlens` carry only what serve runs",
        )


def load(module: str, command: str, part: Part | None) -> ModuleType:
    """``module``, or MissingPart when what fails to import is one of ``part``'s modules.

    Any other missing module is a broken install (or a bug), and propagates as it is.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if part is None or (e.name or "").partition(".")[0] not in part.modules:
            raise
        raise MissingPart(command, part) from None
