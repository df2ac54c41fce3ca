#!/bin/sh
# Regenerates the *_pb2.py modules from the .proto files next to this script.
#
# Needs protoc from grpcio-tools, a development tool only (pip install grpcio-tools==1.74.0:
# its protoc 31.1 writes code for protobuf >= 6.31.1, pyproject's lower bound). The generated
# modules are then pointed at pool.py's private descriptor pool instead of protobuf's default
# one, where TensorFlow's modules register the same message names.
set -e
cd "$(dirname "$0")/../../.."
PYTHON="${PYTHON:-python}"
"$PYTHON" -m grpc_tools.protoc -I. --python_out=. graphops/interchange/proto/*.proto
for module in graphops/interchange/proto/*_pb2.py; do
  sed -i \
    -e 's/^# @@protoc_insertion_point(imports)$/from graphops.interchange.proto.pool import POOL as _POOL\n&/' \
    -e 's/_descriptor_pool\.Default()/_POOL/' "$module"
done
