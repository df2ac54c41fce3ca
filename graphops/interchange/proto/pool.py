"""The descriptor pool of graphops' GraphDef schema.

The schema uses TF's package (`tensorflow.GraphDef`, ...), so it cannot share protobuf's
default pool with TensorFlow's own modules: regenerate.sh points the generated modules here.
"""

from google.protobuf import descriptor_pool

POOL = descriptor_pool.DescriptorPool()
