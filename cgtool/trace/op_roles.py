"""What an aten op or a Python-level tensor call means for capture: a host sync, a data-dependent size,
a copy between host and device, a tensor built from host data. Shared by the tracer and the checks.

Which aten ops synchronize on CUDA, and under which arguments, is the sync table's answer (generated on a GPU,
cgtool/trace/sync_table.py; 37 overloads in torch 2.11). The aten lists here keep only what the table cannot say:
the role of an op (a value read: CG101; an output sized by the data: CG102 and the shape checks, on the GPU run
too, where no table decides), refinements of a role by its arguments (histc's range, equal's sizes, a bool mask
among indices, repeat_interleave's output_size), and syncs that sync debug mode does not see (thrust inside
unique with a dim), which no generated table can hold. tests/test_sync_table.py checks that the shipped table
confirms every listed op it saw syncing."""

from __future__ import annotations

from typing import Any

# aten ops (packet names, e.g. "aten._local_scalar_dense") that read a device value on the host.
SCALAR_READ_ATEN = frozenset({"aten._local_scalar_dense", "aten.equal", "aten.is_nonzero"})

# aten ops whose output size depends on the data, so a GPU run must sync to size the output.
DATA_DEPENDENT_ATEN = frozenset({
    "aten.nonzero", "aten.nonzero_numpy", "aten.argwhere", "aten.masked_select", "aten.unique",
    "aten._unique", "aten._unique2", "aten.unique_dim", "aten.unique_consecutive", "aten.unique_dim_consecutive",
    "aten.bincount", "aten.histc",
})
EQUAL_ATEN = "aten.equal"  # reads only when the sizes match (different sizes: False at once)
HISTC_ATEN = "aten.histc"  # data-dependent only without a range (min == max: the range is read from the data)
# Ops that are data-dependent only with a boolean index tensor among their indices.
INDEX_ATEN = frozenset({"aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl", "aten._index_put_impl_"})
# repeat_interleave with a tensor of repeats syncs unless output_size is given.
REPEAT_ATEN = "aten.repeat_interleave"

COPY_ATEN = frozenset({"aten._to_copy", "aten.copy_", "aten.copy"})

# Python-level calls, by normalized name ("Tensor.item", "torch.tensor").
SCALAR_READ_CALLS = {
    "Tensor.item": "`.item()`",
    "Tensor.__bool__": "`bool(tensor)` (an `if`/`while`/`assert` on a tensor)",
    "Tensor.__float__": "`float(tensor)`",
    "Tensor.__int__": "`int(tensor)`",
    "Tensor.__index__": "using a tensor as a Python index",
    "Tensor.__complex__": "`complex(tensor)`",
    "Tensor.__format__": "formatting a tensor (f-string or format())",
    "Tensor.__repr__": "`print(tensor)`/`repr(tensor)`",
    "Tensor.__str__": "`str(tensor)`",
    "torch.equal": "`torch.equal`",
    "Tensor.equal": "`.equal()`",
    "torch.allclose": "`torch.allclose`",
    "Tensor.allclose": "`.allclose()`",
    "torch.is_nonzero": "`torch.is_nonzero`",
    "Tensor.is_nonzero": "`.is_nonzero()`",
}
EQUAL_CALLS = frozenset({"torch.equal", "Tensor.equal"})
TO_HOST_CALLS = {
    "Tensor.tolist": "`.tolist()`",
    "Tensor.numpy": "`.numpy()`",
    "Tensor.cpu": "`.cpu()`",
    "Tensor.__array__": "`numpy.asarray(tensor)`",
}
MOVE_CALLS = frozenset({"Tensor.to", "Tensor.cuda", "Tensor.copy_", "Tensor.pin_memory"})
# Build a tensor from Python/host data: on a GPU that is a host-to-device copy when a device is given.
DATA_FACTORY_CALLS = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.from_numpy",
                                "torch.frombuffer", "torch.from_dlpack", "torch.scalar_tensor", "Tensor.new_tensor"})
# Factories that make a host tensor when no device is given.
FACTORY_CALLS = DATA_FACTORY_CALLS | frozenset({
    "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.arange", "torch.range", "torch.linspace",
    "torch.logspace", "torch.eye", "torch.rand", "torch.randn", "torch.randint", "torch.randperm",
    "torch.empty_strided", "torch.normal", "torch.tril_indices", "torch.triu_indices",
})
BACKWARD_CALLS = frozenset({"Tensor.backward", "torch.autograd.backward", "torch.autograd.grad"})
# Calls whose inner aten ops are formatting noise (printing a tensor runs dozens of ops).
QUIET_CALLS = frozenset({"Tensor.__repr__", "Tensor.__str__", "Tensor.__format__", "Tensor.tolist",
                         "Tensor.numpy", "Tensor.__array__"})

# What a host watch (setup, inputs) looks at: where host tensors are made and moved.
HOST_WATCH_CALLS = FACTORY_CALLS | MOVE_CALLS | {"Tensor.cpu"}

ALWAYS_RECORDED_CALLS = (frozenset(SCALAR_READ_CALLS) | frozenset(TO_HOST_CALLS) | MOVE_CALLS
                         | FACTORY_CALLS | BACKWARD_CALLS | {"Tensor.record_stream"})


def aten_packet(func: Any) -> str:
    """"aten.mm.default" -> "aten.mm" (the overload does not matter to the checks)."""
    name = str(func)
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else name


def call_name(func: Any) -> str:
    """A stable name for a TorchFunctionMode func: "Tensor.item", "torch.tensor", "torch.nn.functional.dropout"."""
    qual = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
    name = getattr(func, "__name__", qual)
    head = qual.split(".", 1)[0]
    if head in ("TensorBase", "Tensor", "_TensorBase"):
        return "Tensor." + qual.split(".", 1)[1] if "." in qual else "Tensor." + name
    if head == "_VariableFunctionsClass":
        return "torch." + name
    if head == "getset_descriptor":  # property access such as t.shape
        return "Tensor.<property>"
    module = getattr(func, "__module__", None) or ""
    return f"{module}.{name}" if module else name


