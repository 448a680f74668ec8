"""The Lightning profiler integration (skipped when lightning is not installed)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from hpuprof.integrations import lightning as integration


def test_placeholder_explains_missing_extra() -> None:
    if integration.LIGHTNING_AVAILABLE:
        pytest.skip("lightning is installed")
    with pytest.raises(ImportError, match=r"hpuprof\[lightning\]"):
        integration.HPUProfiler(dirpath="x")


def test_step_action_names() -> None:
    assert (
        integration._action_key("[Strategy]SingleDeviceStrategy.training_step") == "training_step"
    )
    assert integration._action_key("[LightningModule]M.optimizer_step") is None


def test_trainer_writes_run(tmp_path: Path) -> None:
    pl = pytest.importorskip("lightning.pytorch")
    import torch
    from lightning.pytorch import LightningModule

    class Tiny(LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(4, 1)

        def training_step(self, batch: list[torch.Tensor], _: int) -> torch.Tensor:
            return self.layer(batch[0]).sum()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.ones(8, 4)), batch_size=2
    )
    prof = integration.HPUProfiler(dirpath=tmp_path, filename="fit", backend="cpu")
    trainer = pl.Trainer(max_steps=3, profiler=prof, logger=False, enable_checkpointing=False)
    trainer.fit(Tiny(), data)
    assert list((tmp_path / "traces").glob("fit-fit-rank0.pt.trace.json"))


@pytest.mark.parametrize("value", ["1", "0", "", "profile_api"])
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_refuses_beside_habana_profile(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """As lightning-habana's `HPUProfiler`: any `HABANA_PROFILE` but its light API mode is
    refused, with its message, before anything is recorded."""
    from hpuprof.errors import UsageError

    monkeypatch.setenv("HABANA_PROFILE", value)
    with pytest.raises(AssertionError) as refused:
        integration.refuse_beside_habana_profile()
    assert str(refused.value) == "`HABANA_PROFILE` should not be set when using `HPUProfiler`"
    assert isinstance(refused.value, UsageError)
    if integration.LIGHTNING_AVAILABLE:
        with pytest.raises(integration.HabanaProfileConflict):
            integration.HPUProfiler(dirpath="never-written")
        assert not Path("never-written").exists()
        gc.collect()  # the refused object's __del__ (Lightning's teardown) runs clean


def test_runs_without_habana_profile_or_beside_its_light_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("HABANA_PROFILE", raising=False)
    integration.refuse_beside_habana_profile()
    integration.refuse_beside_habana_profile({"HABANA_PROFILE": "profile_api_light"})
    monkeypatch.setenv("HABANA_PROFILE", "profile_api_light")
    if integration.LIGHTNING_AVAILABLE:
        assert integration.HPUProfiler(dirpath="x").dirpath == "x"
