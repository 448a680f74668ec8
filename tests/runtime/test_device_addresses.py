"""Device addresses of hpu tensors, as the runtime README's fidelity row says."""

from __future__ import annotations

import copy
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def test_addresses_are_the_storages_and_data_ptr_is_a_wrapper_subclass_zero(hpu: Any) -> None:
    """`data_ptr()` stays torch's wrapper-subclass 0 (plus the offset): torch's deepcopy takes
    its subclass path on it (an address there made `copy.deepcopy` of a model fail); the
    storage's address tells aliases from distinct tensors."""
    hpu("lazy")
    a = torch.ones(4, 3, device="hpu")
    b = torch.ones(4, 3, device="hpu")
    assert a.data_ptr() == 0 and a[1:].data_ptr() == 3 * a.element_size()
    sa, sb = a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()
    assert sa != 0 and sa != sb and a.t().untyped_storage().data_ptr() == sa
    model = torch.nn.Linear(3, 4).to("hpu")
    twin = copy.deepcopy(model)
    assert twin.weight.device.type == "hpu"
    assert twin.weight.untyped_storage().data_ptr() != model.weight.untyped_storage().data_ptr()
    assert torch.equal(twin.weight.cpu(), model.weight.cpu())
