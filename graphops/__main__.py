"""Command line: `python -m graphops ops|kernels|devices|dot ...`.

    python -m graphops ops                 every registered op with its summary
    python -m graphops ops Conv2D          the OpDef (TF's text form); --doc: the wrapper doc
    python -m graphops kernels [Conv2D]    registered kernels, grouped by device type
    python -m graphops devices             the physical devices graphops sees
    python -m graphops dot graph.pb [-o graph.svg]   draw a GraphDef (.pb, .pbtxt, .json)
"""

import argparse
import difflib
import sys

import graphops  # noqa: F401  (registers ops, kernels and devices)
from graphops import kernels  # noqa: F401
from graphops.runtime import devices
from graphops.interchange import graph_io, pictures
from graphops.api.op_docs import op_docstring
from graphops.interchange.op_def_text import op_def_text
from graphops.registry import errors
from graphops.registry.kernel_registry import registered_kernels
from graphops.registry.op_registry import get_op_def, is_registered, list_ops


def _unknown_op(name):
    close = difflib.get_close_matches(name, list_ops(), n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    print(f"graphops: no op named '{name}' is registered.{hint}", file=sys.stderr)
    return 1


def _ops(args):
    if args.name is None:
        names = list_ops()
        width = max(map(len, names), default=0)
        for name in names:
            print(f"{name:<{width}}  {get_op_def(name).summary}".rstrip())
        return 0
    if not is_registered(args.name):
        return _unknown_op(args.name)
    op_def = get_op_def(args.name)
    print(op_docstring(op_def) if args.doc else op_def_text(op_def), end="" if not args.doc
          else "\n")
    return 0


def _kernels(args):
    if args.name is not None and not is_registered(args.name):
        return _unknown_op(args.name)
    by_device = {}
    for kdef in registered_kernels(args.name):
        by_device.setdefault(kdef.device_type, []).append(kdef)
    if not by_device:
        print(f"{args.name or 'graphops'}: no registered kernels")
        return 0
    for device in sorted(by_device):
        kdefs = by_device[device]
        print(f"{device} ({len(kdefs)} kernel{'s' * (len(kdefs) != 1)}):")
        for kdef in kdefs:
            constraints = kdef.summary().split(";", 1)
            detail = constraints[1].strip() if len(constraints) > 1 else ""
            print(f"  {kdef.op:<36} {kdef.kernel_class.__name__:<32} {detail}".rstrip())
    return 0


def _devices(args):
    for device in devices.list_physical_devices():
        print(f"{device.name}  {device.device_type}")
    return 0


def _dot(args):
    dot_text = pictures.visualize(graph_io.read_graph_def(args.file), path=args.output)
    if args.output is None:
        print(dot_text, end="")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m graphops", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ops = sub.add_parser("ops", help="list ops, or print one OpDef")
    ops.add_argument("name", nargs="?")
    ops.add_argument("--doc", action="store_true", help="print the wrapper docstring instead")
    ops.set_defaults(run=_ops)
    kern = sub.add_parser("kernels", help="list registered kernels per device type")
    kern.add_argument("name", nargs="?")
    kern.set_defaults(run=_kernels)
    sub.add_parser("devices", help="list physical devices").set_defaults(run=_devices)
    dot = sub.add_parser("dot", help="draw a GraphDef file: .pb, .pbtxt or .json "
                         "(DOT, or .svg/.png/.pdf)")
    dot.add_argument("file")
    dot.add_argument("-o", "--output", help="output path; the extension picks the format")
    dot.set_defaults(run=_dot)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (errors.OpError, OSError, TypeError) as e:
        print(f"graphops: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
