"""What an op's name, input types and shapes say: its short name, dtype, and FLOPs.

Shared by the loader (`derive.py`, which turns them into the `dtype` / `flops` columns once)
and the analyses. FLOPs from shapes cover mm/bmm/addmm/baddbmm/linear/matmul/conv (conv
assumes stride 1 and same padding).
"""

from __future__ import annotations

import math

import orjson

MATMUL_CONV = frozenset(
    [
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "addbmm",
        "linear",
        "matmul",
        "conv1d",
        "conv2d",
        "conv3d",
        "convolution",
        "_convolution",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "cudnn_convolution",
        "dot",
        "mv",
    ]
)


_DTYPE_ALIASES = {
    "float": "fp32",
    "float32": "fp32",
    "torch.float32": "fp32",
    "f32": "fp32",
    "double": "fp64",
    "float64": "fp64",
    "torch.float64": "fp64",
    "c10::bfloat16": "bf16",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
    "bf16": "bf16",
    "c10::half": "fp16",
    "half": "fp16",
    "float16": "fp16",
    "torch.float16": "fp16",
    "fp16": "fp16",
    "fp32": "fp32",
    "fp64": "fp64",
    "fp8": "fp8",
    "c10::float8_e4m3fn": "fp8",
    "c10::float8_e5m2": "fp8",
    "float8": "fp8",
    "long int": "int64",
    "int64": "int64",
    "long": "int64",
    "int": "int32",
    "int32": "int32",
    "bool": "bool",
    "unsigned char": "uint8",
    "signed char": "int8",
    "short int": "int16",
}


def norm_dtype(text: str) -> str:
    """A dtype name in our vocabulary (fp32, bf16, fp16, fp64, fp8, int64, ...)."""
    t = text.strip().lower()
    return _DTYPE_ALIASES.get(t, t)


def first_float_dtype(types_json: str) -> str:
    """The first floating dtype among an op's recorded input types ("" if none)."""
    if not types_json:
        return ""
    try:
        types = orjson.loads(types_json)
    except orjson.JSONDecodeError:
        return ""
    for t in types if isinstance(types, list) else []:
        d = norm_dtype(str(t))
        if d in ("fp32", "bf16", "fp16", "fp64", "fp8"):
            return d
    return ""


def short_op(name: str) -> str:
    """`aten::addmm.out` -> `addmm`."""
    base = name.split("::", 1)[-1]
    return base.split(".", 1)[0].lstrip("_") if base.startswith("_") else base.split(".", 1)[0]


def shape_flops(name: str, dims_json: str) -> float:
    """Multiply-add FLOPs (2 per MAC) of a matmul/conv op from its input shapes; 0 if unknown."""
    op = short_op(name)
    if op not in MATMUL_CONV or not dims_json:
        return 0.0
    try:
        dims = orjson.loads(dims_json)
    except orjson.JSONDecodeError:
        return 0.0
    shapes = [d for d in dims if isinstance(d, list) and d and all(isinstance(x, int) for x in d)]
    try:
        if op in ("mm",) and len(shapes) >= 2:
            (m, k), (_, n) = shapes[0][-2:], shapes[1][-2:]
            return 2.0 * m * k * n
        if op in ("addmm",) and len(shapes) >= 3:
            (m, k), (_, n) = shapes[1][-2:], shapes[2][-2:]
            return 2.0 * m * k * n
        if op in ("bmm",) and len(shapes) >= 2:
            b, m, k = shapes[0][-3:]
            n = shapes[1][-1]
            return 2.0 * b * m * k * n
        if op in ("baddbmm", "addbmm") and len(shapes) >= 3:
            b, m, k = shapes[1][-3:]
            n = shapes[2][-1]
            return 2.0 * b * m * k * n
        if op == "linear" and len(shapes) >= 2:
            x, w = shapes[0], shapes[1]
            return 2.0 * math.prod(x[:-1]) * x[-1] * w[0]
        if op == "matmul" and len(shapes) >= 2:
            a, b2 = shapes[0], shapes[1]
            if len(a) == 1 or len(b2) == 1:
                return 2.0 * math.prod(a) * (b2[-1] if len(b2) > 1 else 1)
            batch = math.prod(a[:-2]) if len(a) > 2 else 1
            return 2.0 * batch * a[-2] * a[-1] * b2[-1]
        if op in ("dot",) and shapes:
            return 2.0 * shapes[0][0]
        if op in ("mv",) and shapes:
            return 2.0 * shapes[0][0] * shapes[0][1]
        is_conv = op.startswith("conv") or op in ("convolution", "cudnn_convolution")
        if is_conv and len(shapes) >= 2 and len(shapes[0]) >= 3:
            x, w = shapes[0], shapes[1]
            return 2.0 * x[0] * w[0] * math.prod(x[2:]) * math.prod(w[1:])
    except (ValueError, TypeError):
        return 0.0
    return 0.0


_DEVICE_DTYPE_SUFFIXES = ("_f32", "_bf16", "_f16", "_fp8", "_i64", "_i32", "_i16", "_i8", "_u8")


def kernel_base(name: str) -> str:
    """A Gaudi/emulator device op's name without its dtype suffix: `addmm_bf16` -> `addmm`."""
    for suffix in _DEVICE_DTYPE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def op_key(name: str) -> str:
    """The key an ATen op and its device op share: `aten::mul_.Tensor` -> `mul`."""
    return name.split("::", 1)[-1].split(".", 1)[0].strip("_")


FUSED_PREFIX = "fused("
"""The emulator's kernel of a fused TPC chain: `fused(gelu_f32+native_layer_norm_f32)`
(`hpusim.recorder.fused_name`)."""


def kernel_key(name: str) -> str:
    """The same key from a device op's name: `mul_f32` -> `mul`, `_to_copy_bf16` -> `to_copy`;
    a fused chain's kernel that of its first op (its time goes to that op, as a kernel's to the
    one op that launched it)."""
    if name.startswith(FUSED_PREFIX):
        name = name[len(FUSED_PREFIX) :].split("+", 1)[0].removesuffix(")")
    return kernel_base(name).strip("_")
