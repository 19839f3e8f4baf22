"""The Burn Book's "Record" and "Saving and Loading Models" chapters in Python, as the package README
(the documentation page of burn-record) writes them: every Python block of the README runs, in order,
in one namespace, in a temporary folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


def test_the_readme_has_the_books_examples() -> None:
    blocks = _python_blocks(README.read_text())
    assert len(blocks) >= 8
    code = "\n".join(blocks)
    for spelling in [
        "NamedMpkFileRecorder(FullPrecisionSettings())",
        "model.save_file(model_path, recorder)",
        "model.load_file(model_path, recorder, device)",
        "NamedMpkFileRecorder(FullPrecisionSettings()).load(model_path, device)",
        "Model.init_with(record, device)",
        "BinFileRecorder(FullPrecisionSettings())",
        "BinBytesRecorder(FullPrecisionSettings()).load(MODEL_BYTES, device)",
        "model.load_record(record)",
        "CompactRecorder()",
    ]:
        assert spelling in code, spelling


def test_every_python_block_of_the_readme_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    pytest.importorskip("burn.nn")
    pytest.importorskip("burn_ndarray")
    pytest.importorskip("burn_autodiff")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for index, block in enumerate(_python_blocks(README.read_text())):
        exec(compile(block, f"{README}:block{index}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "linear_in.weight: record shape [10, 64], module shape [10, 128]" in printed
    assert "['linear_out.weight', 'linear_out.bias'] ['head']" in printed
    assert "the checksum of its bytes does not match" in printed or "does not match" in printed
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == [
        "checkpoint.mpk",
        "guide-model.mpk.zst",
        "model.bin",
        "model.mpk",
    ]
