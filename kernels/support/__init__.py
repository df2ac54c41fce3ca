"""What kernel modules share: device types, dtype helpers, chunking, thread counts."""
