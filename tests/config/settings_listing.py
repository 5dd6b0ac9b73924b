"""Read back the settings listing of `harness sweep --help` (harness.config.settings_doc
.settings_help): a section line `name:`, then one line per setting, `  key = value` and its help,
the help's further lines indented under its column."""

from __future__ import annotations

import re

from harness.config.settings_doc import TOP

_ENTRY = re.compile(r"^  (\S+) = (.*?)(?: {2,}(.*))?$")


def parse_listing(text: str) -> dict[str, tuple[str, str]]:
    """Dotted key -> (the value as shown, with its default where it differs; the help joined
    back into one line)."""
    out: dict[str, tuple[str, str]] = {}
    section, key = "", None
    for line in text.splitlines():
        if line.startswith("   ") and key is not None:
            value, help_ = out[key]
            out[key] = (value, f"{help_} {line.strip()}".strip())
        elif m := _ENTRY.match(line):
            key = section + m[1]
            out[key] = (m[2].strip(), (m[3] or "").strip())
        elif line.endswith(":") and not line.startswith(" "):
            section, key = ("" if line == f"{TOP}:" else line[:-1] + "."), None
        else:
            raise AssertionError(f"not a line of the settings listing: {line!r}")
    return out


def settings_block(help_text: str) -> str:
    """The settings part of the whole `--help` text: from its heading to the blank line."""
    _, _, rest = help_text.partition("== Settings")
    assert rest, "no settings heading in the help"
    return rest.split("\n", 1)[1].split("\n\n", 1)[0]
