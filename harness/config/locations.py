"""Where the shipped recipes, scenarios and data are, and the sizing margin every server gets:
facts that engines, workloads and validation all need, kept apart so none of them imports
another for them."""

from __future__ import annotations

from functools import cache
from pathlib import Path

CONTEXT_MARGIN = 256  # tokens beyond ISL+OSL a server is sized for (chat template, BOS)

# The top-level folders of the checkout that the harness reads at run time. A wheel carries a
# copy of each under harness/shipped/ (setup.py copies them at build time), so an installed
# harness finds them the same way; benchmarks/, docs/ and tests/ are not needed to run.
SHIPPED_TREES = ("recipes", "scenarios", "data")
SHIPPED_DIR = "shipped"


def checkout_root() -> Path | None:
    """The source checkout this package runs from (an editable install or PYTHONPATH), or None
    when it runs as an installed copy."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "recipes" / "sweep.yaml").is_file():
        return root
    return None


def installed_root() -> Path:
    """The copy of recipes/, scenarios/ and data/ installed with the package."""
    return Path(__file__).resolve().parents[1] / SHIPPED_DIR


@cache
def repo_root() -> Path:
    """The directory that holds recipes/, scenarios/ and data/, which every repository-relative
    path in a recipe (`scenarios/traces/...`, `data/evals/...`) is read against: the checkout
    when running from one, so edits there take effect; else the copy installed with the
    package. Users' own recipe folders come on top through `--config-dir`."""
    return checkout_root() or installed_root()


def data_places(p: str | Path, root: Path | None = None) -> list[Path]:
    """Where a path from a recipe or the command line may be, in the order it is looked for:
    an absolute path is itself; a relative one is the user's own file in the current directory
    first, then the shipped one under `root` (default repo_root(): `scenarios/traces/...`,
    `data/evals/...`). In a checkout run from its root the two are one place."""
    path = Path(p).expanduser()
    if path.is_absolute():
        return [path]
    mine, shipped = Path.cwd() / path, (root or repo_root()) / path
    return [mine] if mine.resolve() == shipped.resolve() else [mine, shipped]


def data_path(p: str | Path, root: Path | None = None) -> Path:
    """The first of data_places() that exists, else the last (the shipped place, which a
    reader's error names together with the others: looked_in())."""
    places = data_places(p, root)
    return next((q for q in places if q.exists()), places[-1])


def looked_in(p: str | Path, root: Path | None = None) -> str:
    """The places data_path() looked, for an error saying it found nothing: "X (the current
    directory) nor Y (shipped)"."""
    places = data_places(p, root)
    if len(places) == 1:
        return str(places[0])
    return f"{places[0]} (the current directory) nor {places[1]} (shipped with the harness)"
