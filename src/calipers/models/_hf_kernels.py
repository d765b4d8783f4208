"""Faster float32 matrix products on CPU: the model's linear layers with weights pre-packed for
oneDNN (the library PyTorch's own compiler uses for the same purpose on CPU).

``torch.nn.Linear`` on CPU calls a general BLAS routine that re-lays out the weight on every
call; for the shapes of a small model (576 x 192, 576 x 49,152) that costs up to half the
speed. Packing each weight once into oneDNN's blocked layout and calling oneDNN's linear
primitive computes the same float32 sums in another order: the results differ by float
rounding only (about 1e-6 relative). Every packed layer is checked against its original on a
random input when packed; a layer that does not agree, or a torch without oneDNN, keeps
``torch.nn.Linear``. (Folding SiLU and the gate product into oneDNN post-ops was tried and
gave no measurable gain on SmolLM2, so it is not done.) The dense weight stays in
place (tied embeddings, anything that reads ``.weight``), so this costs one more copy of the
linear weights in memory; models whose linear weights exceed ``MAX_BYTES`` are left as they
are.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_BYTES", "pack_linears"]

MAX_BYTES = 4 << 30  # a second copy of more than this is not worth the memory

_TOLERANCE = 1e-4  # relative, on a random input: float rounding is ~1e-6


def pack_linears(torch: Any, model: Any) -> int:
    """Swap every float32 CPU ``nn.Linear`` in ``model`` for a oneDNN-packed twin; returns how
    many were swapped (0 when oneDNN is unavailable)."""
    ops = getattr(torch.ops, "mkldnn", None)
    if not torch.backends.mkldnn.is_available() or ops is None:
        return 0
    try:
        reorder, linear = ops._reorder_linear_weight, ops._linear_pointwise
    except (AttributeError, RuntimeError):
        return 0

    class PackedLinear(torch.nn.Module):  # type: ignore[misc]
        def __init__(self, dense: Any, packed: Any) -> None:
            super().__init__()
            self.weight = dense.weight
            self.bias = dense.bias
            self.in_features, self.out_features = dense.in_features, dense.out_features
            self._packed = packed

        def forward(self, x: Any) -> Any:
            return linear(x, self._packed, self.bias, "none", [], "")

    swaps = []
    for module in model.modules():
        for child_name, child in module.named_children():
            if (
                type(child) is torch.nn.Linear
                and child.weight.dtype == torch.float32
                and child.weight.device.type == "cpu"
            ):
                swaps.append((module, child_name, child))
    if sum(dense.weight.numel() * 4 for _p, _n, dense in swaps) > MAX_BYTES:
        return 0
    done = 0
    generator = torch.Generator().manual_seed(0)
    with torch.inference_mode():
        for parent, child_name, dense in swaps:
            try:
                packed = reorder(dense.weight.detach(), 128)
                twin = PackedLinear(dense, packed)
                x = torch.randn(3, dense.in_features, generator=generator)
                want, got = dense(x), twin(x)
            except RuntimeError:
                continue
            if float((got - want).abs().max()) <= _TOLERANCE * max(1.0, float(want.abs().max())):
                setattr(parent, child_name, twin)
                done += 1
    return done
