"""User-facing errors.

Every error a user can cause (a bad path, a checkpoint that does not fit, a bad argument) is
raised as a `SpecPilotError` with a one-line message; the CLI prints it and exits with code 2.
Anything else is a bug and keeps its traceback.
"""


class SpecPilotError(Exception):
    """An error caused by the user's input, reported as one line."""


class CheckpointError(SpecPilotError):
    """A checkpoint is missing, broken, or does not fit the model it is loaded into."""


class ConfigError(SpecPilotError):
    """A configuration value or argument is invalid."""
