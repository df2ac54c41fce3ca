"""The kernels of the summary ops: each writes a serialized `Summary` protocol buffer (our
schema, proto/summary.proto) into a scalar string, as TF's summary_op.cc does.

Histograms use TF's default buckets (tsl's histogram.cc): limits growing by 10% from 1e-12 to
1e20 on both sides of 0, then DBL_MAX; bucket i counts values v with
limit[i - 1] <= v < limit[i]; encoded with runs of empty buckets collapsed into one
(EncodeToProto with preserve_zero_buckets=false). Protobuf loads on a kernel's first use.

Every summary the other kernels make is remembered for a while with its tags (`_made`):
MergeSummary, which must check its inputs and their tags, takes a remembered input as it
is instead of parsing it again. A Summary has one field, its repeated values, so the merge
of serialized Summaries is their concatenation (protobuf merges concatenated messages).
"""

import math
import sys

import numpy as np

from graphops.kernels import compiled
from graphops.kernels.numerics.png_encoder import encode_png
from graphops.kernels.support.kernel_util import DEVICES, object_scalar
from graphops.registry.errors import InvalidArgumentError
from graphops.registry.kernel_registry import OpKernel, register_kernel
from graphops.registry.tensor_shape import shape_str

DBL_MAX = sys.float_info.max


def _default_bucket_limits():
    positive = []
    limit = 1.0e-12
    while limit < 1.0e20:
        positive.append(limit)
        limit *= 1.1
    positive.append(DBL_MAX)
    return np.array([-v for v in reversed(positive)] + [0.0] + positive)


BUCKET_LIMITS = _default_bucket_limits()
_SEARCHED = np.append(BUCKET_LIMITS[:-1], np.inf)   # DBL_MAX itself: in the last bucket
_SAFE = 1e150     # values within +-this: no sum of squares of fewer than 1e8 overflows


def histogram_fields(values, node_name):
    """The HistogramProto fields (dict) TF encodes for `values`, the kept buckets' limits
    and counts as float64 arrays; NaN or infinity is TF's error naming the node. float32
    and float64 take the compiled pass (others are read as float64 first); NumPy's
    operations serve where compiled loops cannot run."""
    flat = values.reshape(-1)
    if not flat.size:
        return {"min": DBL_MAX, "max": -DBL_MAX, "num": 0.0, "sum": 0.0, "sum_squares": 0.0,
                "bucket_limit": np.array([DBL_MAX]), "bucket": np.zeros(1)}
    if flat.dtype not in (np.float32, np.float64):
        flat = flat.astype(np.float64)
    if not compiled.usable():
        return _numpy_histogram_fields(flat, node_name)
    counts = np.zeros(BUCKET_LIMITS.size)
    kept_limits, kept_counts = np.empty(BUCKET_LIMITS.size), np.empty(BUCKET_LIMITS.size)
    kept, low, high, total, squares, bad = compiled.loops("histogram", single=True).histogram(
        flat, BUCKET_LIMITS, _SEARCHED, counts, kept_limits, kept_counts)
    if bad >= 0:
        _raise_non_finite(flat[bad], node_name)
    return {"min": low, "max": high, "num": float(flat.size), "sum": total,
            "sum_squares": squares, "bucket_limit": kept_limits[:kept],
            "bucket": kept_counts[:kept]}


def _raise_non_finite(value, node_name):
    what = "Nan in summary histogram" if np.isnan(value) else "Infinity in Histogram"
    raise InvalidArgumentError(f"{what} for: {node_name}")


def _numpy_histogram_fields(flat, node_name):
    """`histogram_fields` of a non-empty float vector by NumPy's operations."""
    flat = flat.astype(np.float64, copy=False)
    low, high = float(flat.min()), float(flat.max())
    if not (math.isfinite(low) and math.isfinite(high)):         # (NaN: min is NaN)
        _raise_non_finite(flat[np.flatnonzero(~np.isfinite(flat))[0]], node_name)
    if low == 0.0 or high == 0.0:       # TF keeps the first of equal values: a zero's sign
        first_zero = float(flat[np.flatnonzero(flat == 0.0)[0]])
        low, high = (first_zero if low == 0.0 else low), (first_zero if high == 0.0 else high)
    counts = np.bincount(np.searchsorted(_SEARCHED, flat, side="right"),
                         minlength=BUCKET_LIMITS.size)
    keep = counts != 0               # a non-empty bucket, or the last of a run of empty ones
    keep[:-1] |= keep[1:]
    keep[-1] = True
    kept = keep.nonzero()[0]
    if -_SAFE < low and high < _SAFE and flat.size < 1e8:
        total, squares = _sums(flat)
    else:
        with np.errstate(over="ignore", invalid="ignore"):   # sums may overflow, as TF's
            total, squares = _sums(flat)
    return {"min": low, "max": high, "num": float(flat.size), "sum": total,
            "sum_squares": squares, "bucket_limit": BUCKET_LIMITS.take(kept),
            "bucket": counts.take(kept).astype(np.float64)}


def _sums(flat):
    """The sum and the sum of squares, added in order as TF adds them, from +0.0 (a sum of
    -0.0 alone is +0.0, which adding +0.0 at the end gives without changing any other)."""
    return float(flat.cumsum()[-1]) + 0.0, float((flat * flat).cumsum()[-1])


def _summary_pb2():
    global _SUMMARY_PB2
    if _SUMMARY_PB2 is None:
        from graphops.interchange.proto import summary_pb2
        _SUMMARY_PB2 = summary_pb2
    return _SUMMARY_PB2


_SUMMARY_PB2 = None


def _as_bytes(value, what):
    """An element of a string tensor as bytes (strings are held as bytes or str)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    raise InvalidArgumentError(f"{what} holds {value!r}, which is not a string")


def _tag(value):
    """A tag as the str protobuf's string field takes."""
    try:
        return _as_bytes(value, "tags").decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"Summary tag {value!r} is not valid UTF-8") from None


_made = {}       # serialized Summary a kernel made -> its tags, in order


def _summary_string(data, tags):
    """A kernel's output: the serialized Summary `data` as a scalar string, remembered
    (with its values' `tags`) as well formed when at most 32 KiB (a histogram's largest).
    At most 256 are kept (the last run's)."""
    if len(data) <= 1 << 15:
        if len(_made) >= 256:
            _made.clear()
        _made[data] = tags
    return object_scalar(data)


def _require_scalar(tensor, what):
    if tensor.ndim != 0:
        raise InvalidArgumentError(f"{what} must be scalar")


class ScalarSummaryOp(OpKernel):
    """One `simple_value` (the value as float32) per element, tagged by `tags`."""

    def compute(self, ctx):
        tags, values = ctx.input(0), ctx.input(1)
        if tags.shape != values.shape:
            single = f" (tag '{_tag(tags.reshape(-1)[0])}')" if tags.size == 1 else ""
            raise InvalidArgumentError(
                f"tags and values are not the same shape: {shape_str(tags.shape)} != "
                f"{shape_str(values.shape)}{single}")
        ctx.set_output(0, _scalar_summary(tags, values))

    def prepare(self, ctx):
        """For a 0-d tag and value: protobuf's encoding of the tag's Summary with the value
        1.0, its last four bytes (the float's) replaced by the value's, the encoding made
        again when the tag changes (`simple_value` is a oneof member: written whatever its
        value). A NaN, whose signalling bit protobuf quiets, runs compute's encoding."""
        if ctx.input(0).ndim or ctx.input(1).ndim:
            return None
        made = [(None, None, None)]    # (the tag's value, its name, the encoding less 4 bytes)

        def call(inputs):
            tags, values = inputs
            tag = tags[()]
            _, name, template = entry = made[0]        # (one read: other threads replace it)
            if tag is not entry[0]:
                name = _tag(tag)
                template = _scalar_template(name)
                made[0] = tag, name, template
            value = values if values.dtype == np.float32 else _as_float32(values)
            bits = value.tobytes()
            if template is None or value != value:
                return [_scalar_summary(tags, values)]
            return [_summary_string(template + bits, (name,))]
        return call


def _as_float32(values):
    with np.errstate(over="ignore"):
        return values.astype(np.float32)


def _scalar_summary(tags, values):
    """ScalarSummary's output for `tags` and `values` of one shape."""
    summary = _summary_pb2().Summary()
    floats = np.asarray(values).reshape(-1)
    if floats.dtype != np.float32:
        floats = _as_float32(floats)
    names = (_tag(tags[()]),) if tags.ndim == 0 else \
        tuple(_tag(tag) for tag in tags.reshape(-1))
    for name, value in zip(names, floats.tolist()):
        summary.value.add(tag=name, simple_value=value)
    return _summary_string(summary.SerializeToString(), names)


def _scalar_template(name):
    """The encoding of a Summary of one value tagged `name` less the value's four bytes
    (float32, last), or None where protobuf's encoding does not end in the host's bytes
    of 1.0 (protobuf's are little-endian)."""
    pb2 = _summary_pb2()
    one = np.float32(1)
    data = pb2.Summary(value=[pb2.Summary.Value(tag=name, simple_value=float(one))]
                       ).SerializeToString()
    return data[:-4] if data.endswith(one.tobytes()) else None


class HistogramSummaryOp(OpKernel):
    """A histogram of `values`; NaN or infinity is an error naming the node."""

    def compute(self, ctx):
        tag, values = ctx.input(0), ctx.input(1)
        _require_scalar(tag, "tags")
        name = _tag(tag[()])
        ctx.set_output(0, self._summary(name, _tag_field(name), np.asarray(values)))

    def prepare(self, ctx):
        """compute for a 0-d tag, its name and encoding kept while the tag's value is the
        same object."""
        if ctx.input(0).ndim:
            return None
        made = [(None, None, None)]         # (the tag's value, its name, its encoding)

        def call(inputs):
            tag = inputs[0][()]
            _, name, tag_field = entry = made[0]       # (one read: other threads replace it)
            if tag is not entry[0]:
                name = _tag(tag)
                tag_field = _tag_field(name)
                made[0] = tag, name, tag_field
            return [self._summary(name, tag_field, inputs[1])]
        return call

    def _summary(self, name, tag_field, values):
        """The output for a value tagged `name` (`tag_field`: its encoding): a Summary
        of the histogram of `values`, encoded as protobuf encodes it (`_histogram_proto`)."""
        fields = histogram_fields(values, self.node_name)
        value = tag_field + _length_delimited(_HISTO_KEY, _histogram_proto(fields))
        return _summary_string(_length_delimited(_VALUE_KEY, value), (name,))


def _varint(n):
    """The base-128 varint of n >= 0, low groups first."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(number):
    """The key of field `number` of wire type 2 (bytes, a message, a packed list)."""
    return _varint(number << 3 | 2)


# The keys of Summary.value, Value.histo and HistogramProto's buckets (proto/summary.proto)
_VALUE_KEY, _HISTO_KEY, _LIMITS_KEY, _COUNTS_KEY = (_key(n) for n in (1, 5, 6, 7))
_HISTOGRAM_SCALARS = ("min", "max", "num", "sum", "sum_squares")
_ONE_BYTE_VARINTS = [bytes((n,)) for n in range(0x80)]


def _tag_field(name):
    """protobuf's encoding of a Summary.Value holding only the tag `name`."""
    return _summary_pb2().Summary.Value(tag=name).SerializeToString()


def _histogram_proto(fields):
    """The HistogramProto of `histogram_fields`' `fields`, encoded as protobuf encodes it:
    its scalars by protobuf, then the two packed repeated doubles (fields 6 and 7, in the
    order of their numbers, as protobuf writes them) from the arrays' bytes, protobuf's
    conversion of a list of floats costing far more."""
    scalars = _summary_pb2().HistogramProto(**{k: fields[k] for k in _HISTOGRAM_SCALARS})
    return scalars.SerializeToString() + _packed_doubles(
        _LIMITS_KEY, fields["bucket_limit"]) + _packed_doubles(_COUNTS_KEY, fields["bucket"])


def _packed_doubles(key, values):
    """A packed repeated double field: nothing when empty, else its `key`, byte length and
    the values as little-endian float64."""
    if not values.size:
        return b""
    return _length_delimited(key, values.astype("<f8", copy=False).tobytes())


def _length_delimited(key, payload):
    """A field of wire type 2 (its `key`) holding `payload`."""
    size = len(payload)
    return key + (_ONE_BYTE_VARINTS[size] if size < 0x80 else _varint(size)) + payload


class TensorSummaryV2Op(OpKernel):
    """`tensor` as a TensorProto (tensor_content, or string_val for strings), with the
    SummaryMetadata given serialized (unparsable metadata is left empty, as TF does)."""

    def compute(self, ctx):
        from google.protobuf.message import DecodeError

        from graphops.interchange.messages import tensor_to_proto

        tag, tensor, metadata = ctx.input(0), ctx.input(1), ctx.input(2)
        _require_scalar(tag, "tag")
        _require_scalar(metadata, "serialized_summary_metadata")
        summary = _summary_pb2().Summary()
        name = _tag(tag[()])
        value = summary.value.add(tag=name)
        tensor_to_proto(tensor, value.tensor)
        if tensor.dtype != object:           # TF: tensor_content whatever the size (strings:
            for field, _ in value.tensor.ListFields():                      # string_val)
                if field.name not in ("dtype", "tensor_shape"):
                    value.tensor.ClearField(field.name)
            value.tensor.tensor_content = tensor.astype(tensor.dtype.newbyteorder("<")).tobytes()
        value.metadata.SetInParent()
        try:
            value.metadata.ParseFromString(_as_bytes(metadata[()], "serialized_summary_metadata"))
        except DecodeError:           # TF ignores the failure: the metadata stays empty
            value.metadata.Clear()
            value.metadata.SetInParent()
        ctx.set_output(0, _summary_string(summary.SerializeToString(), (name,)))


class MergeSummaryOp(OpKernel):
    """The values of every serialized Summary in the inputs, in order; tags must differ.
    An input a summary kernel other than MergeSummary made is taken as it is; any other is
    parsed (an unparsable one is an error) and its values encoded again, as TF's merged
    Summary has them."""

    def compute(self, ctx):
        ctx.set_output(0, _merged([serialized for tensor in ctx.inputs for serialized in (
            tensor.reshape(-1).tolist() if tensor.ndim else (tensor[()],))]))

    def prepare(self, ctx):
        """compute for inputs that are all scalars."""
        if any(tensor.ndim for tensor in ctx.inputs):
            return None
        return lambda inputs: [_merged([tensor[()] for tensor in inputs])]


def _merged(summaries):
    """MergeSummary's output for its inputs' serialized Summaries, in order."""
    pieces, seen = [], set()
    for serialized in summaries:
        data = serialized if type(serialized) is bytes else _as_bytes(serialized, "inputs")
        tags = _made.get(data)
        if tags is None:
            data, tags = _parsed(data)
        for tag in tags:
            if tag and tag in seen:
                raise InvalidArgumentError(f"Duplicate tag {tag} found in summary inputs ")
            seen.add(tag)
        pieces.append(data)
    # (not remembered: a merged summary is seldom merged again, and would be parsed then)
    return object_scalar(b"".join(pieces))


def _parsed(data):
    """(its values encoded as protobuf encodes them, their tags) of the serialized
    Summary `data` no kernel made; InvalidArgumentError when it does not parse."""
    from google.protobuf.message import DecodeError

    part = _summary_pb2().Summary()
    try:
        part.ParseFromString(data)
    except DecodeError:
        raise InvalidArgumentError("Could not parse one of the summary inputs") from None
    return (_summary_pb2().Summary(value=part.value).SerializeToString(),
            tuple(value.tag for value in part.value))


class ImageSummaryOp(OpKernel):
    """Up to `max_images` images of a [batch, height, width, channels] tensor as PNGs, tagged
    "tag" for a batch of one, else "tag/image/i" (TF's summary_image_op.cc)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.max_images = ctx.get_attr("max_images")
        self.bad_color = np.asarray(ctx.get_attr("bad_color")).reshape(-1)

    def compute(self, ctx):
        tag, images = ctx.input(0), np.asarray(ctx.input(1))
        _require_scalar(tag, "Tags")
        if images.ndim != 4 or images.shape[-1] not in (1, 3, 4):
            raise InvalidArgumentError("Tensor must be 4-D with last dim 1, 3, or 4, not "
                                       f"{shape_str(images.shape)}")
        depth = images.shape[-1]
        if self.bad_color.size < depth:
            raise InvalidArgumentError(f"bad_color must have at least {depth} elements for "
                                       f"{depth} channels, got {self.bad_color.size}")
        base, count = _tag(tag), min(images.shape[0], self.max_images)
        summary = _summary_pb2().Summary()
        for i in range(count):
            image = images[i] if images.dtype == np.uint8 else \
                _float_image_as_uint8(images[i], self.bad_color[:depth].astype(np.uint8))
            value = summary.value.add(tag=base if count == 1 else f"{base}/image/{i}")
            value.image.height, value.image.width = image.shape[:2]
            value.image.colorspace = depth
            value.image.encoded_image_string = encode_png(np.ascontiguousarray(image), -1)
        ctx.set_output(0, _summary_string(summary.SerializeToString(),
                                          tuple(v.tag for v in summary.value)))


def _float_image_as_uint8(image, bad_color):
    """TF's NormalizeFloatImage: finite pixels scaled into [0, 255] (about 128 when any is
    negative) by their largest magnitude, truncated; a pixel with a non-finite channel is
    `bad_color`."""
    pixels = image.astype(np.float32).reshape(-1, image.shape[-1])
    finite = np.isfinite(pixels).all(axis=1)
    good = pixels[finite]
    low = float(good.min()) if good.size else np.inf
    high = float(good.max()) if good.size else -np.inf
    if low < 0:
        magnitude = max(abs(low), abs(high))
        scale, offset = (0.0 if magnitude < 1e-6 else 127.0 / magnitude), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else 255.0 / high), 0.0
    out = np.empty(pixels.shape, np.uint8)
    with np.errstate(invalid="ignore"):
        out[finite] = (good * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    out[~finite] = bad_color
    return out.reshape(image.shape)


# Strings live in host memory: on a GPU the kernels run on host copies, as TF places them.
register_kernel("ScalarSummary", DEVICES, host_memory=("tags", "values", "summary"))(
    ScalarSummaryOp)
register_kernel("HistogramSummary", DEVICES, host_memory=("tag", "values", "summary"))(
    HistogramSummaryOp)
register_kernel("TensorSummaryV2", DEVICES, host_memory=(
    "tag", "tensor", "serialized_summary_metadata", "summary"))(TensorSummaryV2Op)
register_kernel("MergeSummary", DEVICES, host_memory=("inputs", "summary"))(MergeSummaryOp)
register_kernel("ImageSummary", DEVICES, host_memory=("tag", "tensor", "summary"))(
    ImageSummaryOp)
