"""`hpex.kernels.RotaryPosEmbeddingHelper` module (emulated)."""

from hpusim.hpex import (
    RotaryPosEmbeddingHelperV1,
    RotaryPosEmbeddingHelperV2,
    RotaryPosEmbeddingHelperV3,
    RotaryPosEmbeddingMode,
    apply_rotary_pos_emb,
    apply_rotary_pos_emb_bwd,
    match_data_types,
    parse_rope_cache,
)

__all__ = [
    "RotaryPosEmbeddingHelperV1",
    "RotaryPosEmbeddingHelperV2",
    "RotaryPosEmbeddingHelperV3",
    "RotaryPosEmbeddingMode",
    "apply_rotary_pos_emb",
    "apply_rotary_pos_emb_bwd",
    "match_data_types",
    "parse_rope_cache",
]
