"""The repository's three source folders install as one package, `graphops`: registry/ and
kernels/ become graphops.registry and graphops.kernels (`registry` and `kernels` alone are
other projects' names on PyPI). Everything else is in pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = {"graphops": "graphops", "graphops.registry": "registry",
           "graphops.kernels": "kernels"}


def installed_packages():
    """Every package of the three folders, by the name it installs under."""
    return [f"{name}.{sub}" if sub else name for name, folder in FOLDERS.items()
            for sub in ["", *find_packages(folder)]]


if __name__ == "__main__":
    setup(package_dir=FOLDERS, packages=installed_packages())
