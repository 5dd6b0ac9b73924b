"""The argument parser of every `harness` subcommand: argparse's, with its errors in one line.

argparse answers a misused option with its whole usage block and then the error (15 lines for
`harness calibrate`); the README promises one line naming the input, the problem and the fix.
The usage stays one `--help` away, and the line says so."""

from __future__ import annotations

import argparse
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}; `{self.prog} --help` shows the usage\n")
