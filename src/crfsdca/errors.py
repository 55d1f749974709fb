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
