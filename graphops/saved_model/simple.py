"""`simple_save`: a serving SavedModel of a Session in one call, as TF1's."""

from graphops.building.graph_collections import GraphKeys, get_collection
from graphops.saved_model import signature_constants, tag_constants
from graphops.saved_model.builder import SavedModelBuilder
from graphops.saved_model.signature_def_utils import predict_signature_def


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Saves `session`'s graph and variables to `export_dir` tagged "serve", with one
    Predict signature "serving_default" of {name: Tensor} `inputs` and `outputs`; the
    ASSET_FILEPATHS collection's files as assets, devices cleared."""
    signature_def_map = {signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                         predict_signature_def(inputs, outputs)}
    builder = SavedModelBuilder(export_dir)
    builder.add_meta_graph_and_variables(
        session, tags=[tag_constants.SERVING], signature_def_map=signature_def_map,
        assets_collection=get_collection(GraphKeys.ASSET_FILEPATHS),
        main_op=legacy_init_op, clear_devices=True)
    builder.save()
