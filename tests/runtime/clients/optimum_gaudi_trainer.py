"""optimum-habana's GaudiTrainer on a tiny BERT built from a config (no download), in the style
of its docs: GaudiTrainingArguments(use_habana=True, use_lazy_mode=True,
use_hpu_graphs_for_inference=True) + GaudiConfig with the fused AdamW / clip-norm paths."""

import sys

import torch
from optimum.habana import GaudiConfig, GaudiTrainer, GaudiTrainingArguments
from transformers import BertConfig, BertForSequenceClassification


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seq=16, vocab=128):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)
        self.labels = (self.ids[:, 0] % 2).long()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {
            "input_ids": self.ids[i],
            "attention_mask": torch.ones_like(self.ids[i]),
            "labels": self.labels[i],
        }


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "gaudi_out"
    config = BertConfig(
        vocab_size=128,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=2,
    )
    model = BertForSequenceClassification(config)
    gaudi_config = GaudiConfig(
        use_fused_adam=True, use_fused_clip_norm=True, use_torch_autocast=False
    )
    args = GaudiTrainingArguments(
        output_dir=out,
        use_habana=True,
        use_lazy_mode=True,
        use_hpu_graphs_for_inference=True,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=8,
        num_train_epochs=1,
        max_steps=4,
        logging_steps=2,
        report_to=[],
        save_strategy="no",
        seed=0,
    )
    trainer = GaudiTrainer(
        model=model,
        gaudi_config=gaudi_config,
        args=args,
        train_dataset=Tokens(64),
        eval_dataset=Tokens(16),
    )
    result = trainer.train()
    print("train", result.training_loss)
    print("eval", trainer.evaluate())
