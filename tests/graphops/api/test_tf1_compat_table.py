"""docs/make_tf1_compat.py: the TF1 compatibility table, and that docs/tf1-compat.md is
the table of graphops as it is now."""

import importlib.util
import os
import types

import pytest

import graphops
from tests.paths import ROOT

_spec = importlib.util.spec_from_file_location(
    "make_tf1_compat", os.path.join(ROOT, "docs", "make_tf1_compat.py"))
make_tf1_compat = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_tf1_compat)


def fake_tf():
    nn = types.SimpleNamespace(conv2d=object())
    return types.SimpleNamespace(reshape=object(), nn=nn, train=types.SimpleNamespace())


def test_names_are_read_without_comments_or_duplicates(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("# header\nreshape\n\nnn.conv2d  # inline\nreshape\n")
    assert make_tf1_compat.read_names(path) == ["nn.conv2d", "reshape"]


def test_names_are_split_into_present_and_lacking_per_namespace():
    names = ["reshape", "matmul", "nn.conv2d", "nn.conv3d", "train.Saver", "train.x.y"]
    table = make_tf1_compat.by_namespace(names, fake_tf())
    assert table == {"tf": (["reshape"], ["matmul"]), "tf.nn": (["conv2d"], ["conv3d"]),
                     "tf.train": ([], ["Saver"]), "tf.train.x": ([], ["y"])}
    assert list(table)[0] == "tf"


def test_rendered_table_counts_and_lists_names():
    text = make_tf1_compat.render(make_tf1_compat.by_namespace(
        ["reshape", "matmul", "nn.conv2d"], fake_tf()))
    assert "graphops has 2 of the 3 names." in text
    assert "| [`tf.nn`](#tfnn) | 1 | 0 |" in text
    assert "**Lacks (1):** `matmul`" in text
    assert "**Lacks (0):** -" in text


def test_doc_is_current():
    if not make_tf1_compat.NAMES.exists():
        pytest.skip("graphops/api/tf1_api_names.txt is not there yet")
    expected = make_tf1_compat.render(
        make_tf1_compat.by_namespace(make_tf1_compat.read_names(), graphops))
    with open(make_tf1_compat.OUT) as f:
        assert f.read() == expected, "run: python docs/make_tf1_compat.py"
