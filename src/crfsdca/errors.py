"""Exceptions the command-line interface reports as a one-line error, without a traceback."""


class CrfsdcaError(Exception):
    """Base class of the package's expected errors (bad input, bad data, bad configuration)."""


class DataFormatError(CrfsdcaError, ValueError):
    """A raw or processed data file is not in the expected format.

    The message names the file, the line (where there is one) and what was expected.
    """

    def __init__(self, path, message: str, line: int | None = None):
        self.path = str(path)
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ChecksumError(CrfsdcaError):
    """A raw file's content does not match its expected sha256 (or is a truncated archive)."""


class DownloadError(CrfsdcaError):
    """A raw file could not be fetched from its address."""


class ConfigError(CrfsdcaError, ValueError):
    """A dataset specification (config.yaml section) is invalid."""


class OutputError(CrfsdcaError, OSError):
    """An output cannot be written (a file in the way, no permission): found before the work."""


class DivergedError(CrfsdcaError, ArithmeticError):
    """Training diverged: the objective became non-finite (no model is written)."""


class ResourceError(CrfsdcaError):
    """The work would not fit in the memory available; the message gives the way out."""


class Terminated(BaseException):  # noqa: N818 (named like KeyboardInterrupt, its sibling)
    """SIGTERM (``kill``, ``timeout``, SLURM's time limit and preemption), raised in the main
    thread as Ctrl-C raises KeyboardInterrupt, so that a command can keep what it has."""


def excerpt(text: str, limit: int = 80) -> str:
    """``repr`` of ``text``, cut to about ``limit`` characters: an error message quotes its
    input, never a 4 MB line whole."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def one_line(e: BaseException, limit: int = 200) -> str:
    """An exception's message on one line, cut to ``limit`` characters (a library's
    message quoted in one of the package's errors)."""
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= limit else text[:limit] + "..."
