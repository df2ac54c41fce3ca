"""The compiled loops' on-disk caches (kernels/compiled/__init__.py): numba checks only a
cached function's own module, so any module's change drops them all."""

from graphops.kernels.compiled import drop_stale_caches


def _package(tmp_path):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "b.py").write_text("B = 2\n")
    (tmp_path / "__pycache__").mkdir()
    return tmp_path


def _cache_files(package, names=("a.f-1.py311.nbi", "a.f-1.py311.1.nbc", "a.cpython-311.pyc")):
    for name in names:
        (package / "__pycache__" / name).write_bytes(b"x")


def _left(package):
    return sorted(p.name for p in (package / "__pycache__").iterdir()
                  if p.name != "sources.sha256")


def test_caches_stay_while_the_sources_stay_and_go_when_any_changes(tmp_path):
    package = _package(tmp_path)
    _cache_files(package)
    drop_stale_caches(str(package))          # no digest yet: compiled from unknown sources
    assert _left(package) == ["a.cpython-311.pyc"]
    _cache_files(package)
    drop_stale_caches(str(package))
    assert _left(package) == ["a.cpython-311.pyc", "a.f-1.py311.1.nbc", "a.f-1.py311.nbi"]
    (package / "b.py").write_text("B = 3\n")   # another module than the cached function's
    drop_stale_caches(str(package))
    assert _left(package) == ["a.cpython-311.pyc"]
    _cache_files(package)
    (package / "c.py").write_text("")          # a module added
    drop_stale_caches(str(package))
    assert _left(package) == ["a.cpython-311.pyc"]


def test_a_package_without_a_cache_directory_is_left_alone(tmp_path):
    (tmp_path / "a.py").write_text("A = 1\n")
    drop_stale_caches(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_caches_under_numba_cache_dir_go_when_a_source_changes(tmp_path, monkeypatch):
    """Where NUMBA_CACHE_DIR is set numba keeps a package's cache files in a directory of
    its own there (the one a cached function of the package gets): the first call makes
    and stamps it, so the caches then compiled stay, and they go when any module changes."""
    import importlib.util
    from numba import config
    package = _package(tmp_path / "package")
    (package / "c.py").write_text(
        "from numba import njit\n\n\n@njit(cache=True)\ndef f():\n    return 1\n")
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "numba_cache"))
    spec = importlib.util.spec_from_file_location("cached_module", package / "c.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cache = tmp_path / "numba_cache" / module.f._cache._cache_path.rsplit("/", 1)[-1]
    assert module.f._cache._cache_path == str(cache)
    cache.rmdir()                            # as in a process that has not cached yet
    drop_stale_caches(str(package))
    names = ["a.f-1.py311.nbi", "a.f-1.py311.1.nbc"]
    for name in names:
        (cache / name).write_bytes(b"x")
    drop_stale_caches(str(package))
    assert sorted(p.name for p in cache.iterdir()) == sorted(names + ["sources.sha256"])
    (package / "a.py").write_text("A = 2\n")
    drop_stale_caches(str(package))
    assert sorted(p.name for p in cache.iterdir()) == ["sources.sha256"]
