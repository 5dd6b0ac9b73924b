"""The build step pyproject.toml cannot declare: recipes/, scenarios/ and data/ stay at the top
of the checkout (where they are edited) and are copied into the wheel as harness/shipped/, which
harness.config.locations.repo_root() reads when the harness runs outside a checkout. The
metadata, dependencies and extension module are all in pyproject.toml."""

from __future__ import annotations

import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

# the same names as harness/config/locations.py SHIPPED_TREES and SHIPPED_DIR (not imported:
# the build must not import the package it builds)
SHIPPED_TREES = ("recipes", "scenarios", "data")
SHIPPED_DIR = os.path.join("harness", "shipped")
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


class BuildPyWithRecipes(build_py):
    """build_py, then the recipe, scenario and data trees as package data."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install runs from the checkout, which has them already
        for tree in SHIPPED_TREES:
            dest = os.path.join(self.build_lib, SHIPPED_DIR, tree)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(tree, dest, ignore=SKIPPED)


setup(cmdclass={"build_py": BuildPyWithRecipes})
