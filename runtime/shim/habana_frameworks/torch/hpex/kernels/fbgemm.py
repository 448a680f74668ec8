"""`hpex.kernels.fbgemm` (emulated): fbgemm's recommendation-model kernels are Gaudi TPC
kernels without a CPU reference here; each raises NotImplementedError naming the emulator."""

from hpusim.hpex import unavailable_function

_WHY = "fbgemm TPC kernels have no CPU reference in the emulator"
bounds_check_indices = unavailable_function(
    "habana_frameworks.torch.hpex.kernels.fbgemm.bounds_check_indices", _WHY
)
expand_into_jagged_permute = unavailable_function(
    "habana_frameworks.torch.hpex.kernels.fbgemm.expand_into_jagged_permute", _WHY
)
permute_1D_sparse_data = unavailable_function(
    "habana_frameworks.torch.hpex.kernels.fbgemm.permute_1D_sparse_data", _WHY
)
permute_2D_sparse_data = unavailable_function(
    "habana_frameworks.torch.hpex.kernels.fbgemm.permute_2D_sparse_data", _WHY
)
split_embedding_codegen_lookup_function = unavailable_function(
    "habana_frameworks.torch.hpex.kernels.fbgemm.split_embedding_codegen_lookup_function", _WHY
)
