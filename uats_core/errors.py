"""Bad input, by what it was given to: every error names the field to fix (`.field`) and says how, as one line
`<field>: <message>` that the CLI prints as `error: ...` and the app shows in its notice. This module imports
nothing from the project, so any module may raise these without pulling in the one that owns the field."""

from __future__ import annotations

from pathlib import Path


class FieldError(ValueError):
    """Bad input: `.field` names what to fix; the message says how."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


class ConfigError(FieldError):
    """A search setting (SearchConfig, the limits, a command-line flag)."""


class ProblemError(FieldError):
    """A problem, a dataset file or a typed question."""


class BackendError(FieldError):
    """A model that cannot serve as asked: raised at load, names the model and the fix."""


class EmbedderError(FieldError):
    """DORA's text embedder."""


class ControllerError(FieldError):
    """A-UATS's controller checkpoint that cannot be used: names the file and the fix."""

    def __init__(self, path: str | Path, message: str) -> None:
        super().__init__("controller", f"checkpoint {path}: {message}")
