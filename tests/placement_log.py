"""Reading what `log_device_placement=True` prints: one `node: (Op): device[ note]` line a node."""

import re

CPU_NAME = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU_NAME = "/job:localhost/replica:0/task:0/device:GPU:0"

_LINE = re.compile(r"^(\S+): \((\w+)\): (\S+)", re.M)


def parse(text):
    """{node name: (op type, full device name)} from placement log text."""
    return {m.group(1): (m.group(2), m.group(3)) for m in _LINE.finditer(text)}
