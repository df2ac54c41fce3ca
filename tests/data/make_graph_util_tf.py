"""Makes graph_util_tf.npz: TF 2.21's tf.compat.v1.graph_util results that CI compares with
without TensorFlow (needs TensorFlow).

- extract_<i>, prune_<i>: extract_sub_graph / remove_training_nodes of the GraphDefs in
  tests/graphops/api/test_graph_util.py (cases EXTRACTIONS[i], PROTECTIONS[i]);
- hand_<i>: convert_variables_to_constants of HAND_MADE in test_graph_util_freeze.py
  (case HAND_CASES[i], values HAND_VALUES, through a stand-in session);
- <kind>_input, _names, _value_<i>, _outputs, _frozen for each of TF_KINDS: a TF-built
  GraphDef (shapes attached), the tensors TF's freezer fetched and their values, the output
  node names and TF's frozen GraphDef.

GraphDefs are stored as serialized bytes (uint8 arrays), read with allow_pickle=False.

    /path/to/tf/venv/bin/python tests/data/make_graph_util_tf.py
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import tensorflow as tf  # noqa: E402
from tensorflow.python.ops import control_flow_util  # noqa: E402

from tests.graphops.api import test_graph_util as gu, test_graph_util_freeze as fr  # noqa: E402

v1 = tf.compat.v1


def _bytes(graph_def):
    return np.frombuffer(graph_def.SerializeToString(deterministic=True), np.uint8)


def _theirs(graph_def):
    return v1.GraphDef.FromString(graph_def.SerializeToString())


class _Recorder:
    """A session that records what TF's freezer fetches."""

    def __init__(self, sess):
        self.sess, self.names, self.values = sess, [], []

    def run(self, names):
        self.names, self.values = list(names), self.sess.run(names)
        return self.values


def main():
    v1.disable_eager_execution()
    out = {}
    for i, dest in enumerate(gu.EXTRACTIONS):
        out[f"extract_{i}"] = _bytes(v1.graph_util.extract_sub_graph(_theirs(gu.SUB_GRAPH),
                                                                     dest))
    for i, protected in enumerate(gu.PROTECTIONS):
        out[f"prune_{i}"] = _bytes(v1.graph_util.remove_training_nodes(
            _theirs(gu.TRAINING), protected))
    for i, (allow, deny, _) in enumerate(fr.HAND_CASES):
        out[f"hand_{i}"] = _bytes(v1.graph_util.convert_variables_to_constants(
            fr._Values(fr.HAND_VALUES), _theirs(fr.HAND_MADE), ["out"], allow, deny))
    for kind in fr.TF_KINDS:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = kind.endswith("v2")     # else v1 cond
        g, sess, outputs = fr._tf_graphs(tf, kind)
        with sess:
            graph_def = g.as_graph_def(add_shapes=True)
            recorder = _Recorder(sess)
            frozen = v1.graph_util.convert_variables_to_constants(recorder, graph_def, outputs)
        out[f"{kind}_input"] = _bytes(graph_def)
        out[f"{kind}_names"] = np.array(recorder.names)
        out.update({f"{kind}_value_{i}": v for i, v in enumerate(recorder.values)})
        out[f"{kind}_outputs"] = np.array(outputs)
        out[f"{kind}_frozen"] = _bytes(frozen)
    np.savez_compressed(os.path.join(HERE, "graph_util_tf.npz"), **out)


if __name__ == "__main__":
    main()
