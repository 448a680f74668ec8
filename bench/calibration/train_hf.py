"""Fine-tune a Hugging Face model on an HPU as optimum-habana's examples do: an ordinary Gaudi
training script (no download: the model is built from its published configuration, random
inputs stand in for the data set).

    python bench/calibration/train_hf.py --model swin-base --batch 160 --steps 3

The recipe is the one optimum-habana's `GaudiTrainer` runs for its example tests
(tests/test_examples.py with tests/configs/examples/*.json): optimum-habana's Gaudi versions of
the model classes (`adapt_transformers_to_gaudi`), bf16 autocast (the models' `gaudi_config`,
`use_torch_autocast`), FusedAdamW (`use_fused_adam`) and FusedClipNorm at max norm 1.0
(`use_fused_clip_norm`), lazy mode with a `mark_step` after the backward and after the
optimizer step (and between forward and backward with `--pipelining-fwd-bwd`, as the image
classification tests run). `--torch-compile` compiles the model as the Trainer's
`--torch_compile --torch_compile_backend hpu_backend` does (accelerate's `torch.compile(model,
backend="hpu_backend")`; run it in eager mode, `hpuprof predict --mode compile`), as the question
answering tests run (optimum-habana tests/test_examples.py, `torch_compile=True`). `--layers N` builds the model with N transformer blocks (Swin: N
blocks in its third stage). `--model bert-large-pretrain` is MLPerf Training's BERT instead
(mlcommons/training_results_v3.1, Intel-HabanaLabs/benchmarks/bert, HLS-Gaudi2-PT): packed rows
of 512 tokens, the masked-LM head at the masked positions only, FusedLamb, no clipping by the
trainer.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import torch

MODELS = ("swin-base", "vit-base", "bert-large", "roberta-large", "bert-large-pretrain")
PREDICTIONS_PER_ROW = 76 * 2
"""MLPerf BERT: up to 76 masked positions per sequence (max_predictions_per_seq), two
sequences per packed row on average (the packed data set's 56 sequences in 28 rows a card)."""


def build(name: str, layers: int | None) -> tuple[Any, str]:
    """The model (random weights) and its input kind: "image", "glue" or "squad"."""
    import transformers as tf

    if name == "swin-base":  # microsoft/swin-base-patch4-window7-224-in22k, 10 labels
        depths = [2, 2, 18 if layers is None else layers, 2]
        cfg = tf.SwinConfig(
            embed_dim=128, depths=depths, num_heads=[4, 8, 16, 32], window_size=7, num_labels=10
        )
        return tf.SwinForImageClassification(cfg), "image"
    if name == "vit-base":  # google/vit-base-patch16-224-in21k, 10 labels
        cfg = tf.ViTConfig(num_hidden_layers=12 if layers is None else layers, num_labels=10)
        return tf.ViTForImageClassification(cfg), "image"
    if name == "bert-large":  # bert-large-uncased-whole-word-masking, MRPC (2 labels)
        cfg = tf.BertConfig(
            hidden_size=1024, num_hidden_layers=24 if layers is None else layers,
            num_attention_heads=16, intermediate_size=4096, num_labels=2,
        )  # fmt: skip
        return tf.BertForSequenceClassification(cfg), "glue"
    if name == "bert-large-pretrain":  # MLPerf BERT: the masked-LM and next-sentence heads
        cfg = tf.BertConfig(
            hidden_size=1024, num_hidden_layers=24 if layers is None else layers,
            num_attention_heads=16, intermediate_size=4096, hidden_dropout_prob=0.1,
        )  # fmt: skip
        return BertPretraining(tf.BertForPreTraining(cfg)), "pretrain"
    # roberta-large, SQuAD; "eager" attention: torch's SDPA with a mask takes its math path,
    # which the emulator runs on C++ CPU tensors and so in fp32 (torch upcasts bf16 there, and
    # HF's mask check reads the device); the bridge runs those ops in bf16, as eager attention
    cfg = tf.RobertaConfig(
        vocab_size=50265, hidden_size=1024, num_hidden_layers=24 if layers is None else layers,
        num_attention_heads=16, intermediate_size=4096, max_position_embeddings=514,
        type_vocab_size=1, attn_implementation="eager",
    )  # fmt: skip
    return tf.RobertaForQuestionAnswering(cfg), "squad"


class BertPretraining(torch.nn.Module):
    """BERT pre-training as MLPerf's implementation runs it: the masked-LM head only at the
    masked positions (gathered), the next-sentence head on the pooled output."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        token_type_ids: torch.Tensor,
        masked_positions: torch.Tensor,
        masked_labels: torch.Tensor,
        next_sentence_label: torch.Tensor,
    ) -> Any:
        bert = self.model.bert
        hidden, pooled = bert(input_ids, attention_mask, token_type_ids, return_dict=False)[:2]
        flat = hidden.reshape(-1, hidden.shape[-1])
        rows = torch.arange(hidden.shape[0], device=hidden.device)[:, None] * hidden.shape[1]
        # advanced indexing: its backward is an accumulating index_put_, an HPU kernel
        # (index_select's, the out-of-place index_add, is not: a CPU fallback)
        picked = flat[(masked_positions + rows).reshape(-1)]
        heads = self.model.cls
        scores = heads.predictions(picked)
        mlm = torch.nn.functional.cross_entropy(scores.float(), masked_labels.reshape(-1))
        nsp = torch.nn.functional.cross_entropy(
            heads.seq_relationship(pooled).float(), next_sentence_label
        )

        class Out:
            loss = mlm + nsp

        return Out()


def batch_of(kind: str, model: Any, batch: int, seq: int) -> dict[str, torch.Tensor]:
    """One batch of random inputs on the host, as the data loader gives them."""
    if kind == "image":
        return {
            "pixel_values": torch.randn(batch, 3, 224, 224),
            "labels": torch.randint(0, 10, (batch,)),
        }
    vocab = model.config.vocab_size
    inputs = {
        "input_ids": torch.randint(0, vocab, (batch, seq)),
        "attention_mask": torch.ones(batch, seq, dtype=torch.long),
    }
    if kind == "pretrain":
        inputs["token_type_ids"] = torch.zeros(batch, seq, dtype=torch.long)
        inputs["masked_positions"] = torch.randint(0, seq, (batch, PREDICTIONS_PER_ROW))
        inputs["masked_labels"] = torch.randint(0, vocab, (batch, PREDICTIONS_PER_ROW))
        inputs["next_sentence_label"] = torch.randint(0, 2, (batch,))
    elif kind == "glue":
        inputs["token_type_ids"] = torch.zeros(batch, seq, dtype=torch.long)
        inputs["labels"] = torch.randint(0, 2, (batch,))
    else:
        inputs["start_positions"] = torch.randint(0, seq, (batch,))
        inputs["end_positions"] = torch.randint(0, seq, (batch,))
    return inputs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=MODELS, default="swin-base")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=128, help="text models' sequence length")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--pipelining-fwd-bwd", action="store_true")
    ap.add_argument("--torch-compile", action="store_true")
    args = ap.parse_args(argv)
    import habana_frameworks.torch.core as htcore
    from habana_frameworks.torch.hpex.normalization import FusedClipNorm
    from habana_frameworks.torch.hpex.optimizers import FusedAdamW, FusedLamb
    from optimum.habana.transformers.modeling_utils import adapt_transformers_to_gaudi

    adapt_transformers_to_gaudi()
    torch.manual_seed(0)
    with torch.device("hpu"):  # built on the device, as large models are: no host copy
        model, kind = build(args.model, args.layers)
    model.train()
    step_model = torch.compile(model, backend="hpu_backend") if args.torch_compile else model
    decay = [p for n, p in model.named_parameters() if "bias" not in n and "LayerNorm" not in n]
    rest = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}]
    lamb = kind == "pretrain"  # MLPerf BERT: LAMB (its own gradient-norm clipping)
    opt = FusedLamb(groups, lr=4e-4) if lamb else FusedAdamW(groups, lr=3e-5)
    clip = None if lamb else FusedClipNorm(model.parameters(), 1.0)
    # the data loader's batch, made once: its workers prepare batches beside the training loop
    # (making random images on this machine's CPU is not the recipe's work); each step copies
    # it to the device
    host_batch = batch_of(kind, model, args.batch, args.seq)
    for _ in range(args.steps):
        inputs = {k: v.to("hpu", non_blocking=True) for k, v in host_batch.items()}
        with torch.autocast("hpu", dtype=torch.bfloat16):
            loss = step_model(**inputs).loss
        if args.pipelining_fwd_bwd:
            htcore.mark_step()
        loss.backward()
        htcore.mark_step()
        if clip is not None:
            clip.clip_norm(model.parameters())
        opt.step()
        opt.zero_grad(set_to_none=True)
        htcore.mark_step()
    print(f"loss {loss.item():.3f}")  # one host read at the end, as the Trainer logs
    return 0


if __name__ == "__main__":
    sys.exit(main())
