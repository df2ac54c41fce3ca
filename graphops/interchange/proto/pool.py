"""The descriptor pool of graphops' GraphDef schema.

The schema uses TF's package (`tensorflow.GraphDef`, ...), so it cannot share protobuf's
default pool with TensorFlow's own modules: regenerate.sh points the generated modules here.
"""

from google.protobuf import any_pb2, descriptor_pool

POOL = descriptor_pool.DescriptorPool()

# protobuf's well-known google.protobuf.Any, which MetaGraphDef's any fields use
POOL.AddSerializedFile(any_pb2.DESCRIPTOR.serialized_pb)
