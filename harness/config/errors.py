"""Configuration errors that name the file, the key and the fix."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

# The locator: a dotted config key -> the file, or the command-line override, its value came
# from (harness.config.validate.Locator builds one from Hydra's choices and the overrides).
# Every check takes one as `where`; ConfigError.at names the key once.
Where = Callable[[str], str]


class ConfigError(Exception):
    """Bad input, found before anything expensive starts.

    `where` is the file (or command-line override) the value came from, `key` its dotted path,
    `problem` what is wrong, `fix` what to do about it.
    """

    def __init__(self, where: str, key: str, problem: str, fix: str) -> None:
        self.where, self.key, self.problem, self.fix = where, key, problem, fix
        super().__init__(str(self))

    @classmethod
    def at(cls, where: Where, key: str, problem: str, fix: str) -> ConfigError:
        """The error for `key`, located by `where` (the file or override it came from): the
        key is named once."""
        return cls(where(key), key, problem, fix)

    def __str__(self) -> str:
        # One line, as the README promises of every error: a log grep or a CI annotation
        # carries the whole of it.
        return f"config error in {self.where}, key {self.key}: {self.problem}; fix: {self.fix}"


class YamlFileError(ConfigError):
    """A config file that does not load as YAML: one line, the file, the problem and the fix
    (the key is the whole file)."""

    def __init__(self, path: str, problem: str, fix: str) -> None:
        super().__init__(path, "(the whole file)", problem, fix)

    def __str__(self) -> str:
        return f"{self.where} does not load as YAML: {self.problem}; fix: {self.fix}"


def did_you_mean(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
