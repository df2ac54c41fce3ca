"""Where the repository and the tests' data are, for test modules at any depth."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
LIBRARY_DIRS = tuple(f"{ROOT / folder}/" for folder in ("graphops", "registry", "kernels"))
