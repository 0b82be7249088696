"""User-facing errors: the CLI prints their message as one line, never a traceback."""


class UserError(ValueError):
    """A mistake in the user's input (config key, data file, row, path) with a one-line message."""


class ConfigError(UserError):
    """A configuration mistake (unknown key or option, a value no run can use), found before
    anything loads."""


class DataError(UserError):
    """A data file, row or field that cannot be used (the message names which)."""


class StorageError(UserError):
    """A file or folder that cannot be written (read-only or full filesystem, no permission):
    the message names it and says what to do; it is the machine's state, not a bug."""


class RunInterrupted(Exception):
    """SIGINT/SIGTERM stopped a run after saving a checkpoint; `signal` is the signal number.
    The command exits with 128 + signal after printing the message (which says how to resume)."""

    def __init__(self, message: str, signal: int):
        super().__init__(message)
        self.signal = signal
