"""Module constants set for the length of a `with` block (hypothesis tests cannot take
pytest's function-scoped monkeypatch)."""

import contextlib


@contextlib.contextmanager
def module_settings(module, **values):
    """Sets ``module.NAME = value`` for each keyword, restoring the old values on exit."""
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
