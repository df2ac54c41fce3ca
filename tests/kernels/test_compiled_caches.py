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
    its own there: those go too when any module changes."""
    from numba import config
    from numba.core.caching import UserProvidedCacheLocator
    package = _package(tmp_path / "package")
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "numba_cache"))
    cache = tmp_path / "numba_cache" / UserProvidedCacheLocator.get_suitable_cache_subpath(
        str(package / "__init__.py"))
    cache.mkdir(parents=True)
    names = ["a.f-1.py311.nbi", "a.f-1.py311.1.nbc"]
    for name in names:
        (cache / name).write_bytes(b"x")
    drop_stale_caches(str(package))
    assert sorted(p.name for p in cache.iterdir()) == ["sources.sha256"]
    for name in names:
        (cache / name).write_bytes(b"x")
    drop_stale_caches(str(package))
    assert sorted(p.name for p in cache.iterdir()) == sorted(names + ["sources.sha256"])
    (package / "a.py").write_text("A = 2\n")
    drop_stale_caches(str(package))
    assert sorted(p.name for p in cache.iterdir()) == ["sources.sha256"]
