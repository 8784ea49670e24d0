"""The parent reads bundles' tensors as numpy arrays, and never imports torch to judge."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save

from parity import arrays
from tests.fixtures.runs import real_run

DTYPES = [
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_a_worker_writes_reads_back_exactly(dtype: torch.dtype) -> None:
    """Values, shapes and dtypes as torch wrote them; bfloat16, which numpy lacks, widened
    to float32 without rounding (its bits are float32's upper half)."""
    gen = torch.Generator().manual_seed(0)
    held = {
        "x": (torch.randn(3, 5, generator=gen) * 50).to(dtype),
        "empty": torch.zeros(0, 4, dtype=dtype),
        "scalar": torch.tensor(1, dtype=dtype),
    }
    got = arrays.read(save(held))
    for name, t in held.items():
        wide = t.float() if dtype == torch.bfloat16 else t
        assert got[name].shape == tuple(t.shape)
        assert got[name].dtype == wide.numpy().dtype
        assert np.array_equal(got[name], wide.numpy()), name
    assert arrays.floating(got["x"]) == dtype.is_floating_point


def test_a_file_the_library_refuses_or_a_dtype_parity_never_writes_is_one_error() -> None:
    with pytest.raises(ValueError):
        arrays.read(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    good = save({"x": torch.ones(4)})
    with pytest.raises(ValueError):
        arrays.read(good[:-4])  # cut short: the header's offsets point past the end
    fp8 = save({"f8": torch.zeros(2, dtype=torch.float8_e4m3fn)})
    with pytest.raises(ValueError, match="'f8' has dtype F8_E4M3, which parity never writes"):
        arrays.read(fp8)


def test_cosine_similarity_is_torchs_including_zero_and_non_finite_rows() -> None:
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(6, 40, generator=gen, dtype=torch.float64)
    b = a + 0.5 * torch.randn(6, 40, generator=gen, dtype=torch.float64)
    b[1] = 0.0  # a zero row: 0, not NaN
    b[2, 5] = float("nan")
    a[3, 0] = float("inf")
    a[4] = -b[4]  # opposite: -1
    want = torch.nn.functional.cosine_similarity(a, b, dim=-1).numpy()
    got = arrays.cosine_similarity(a.numpy(), b.numpy())
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert got[1] == 0.0 and np.isnan(got[2]) and got[4] == pytest.approx(-1.0)
    flat = arrays.cosine_similarity(a[0].numpy(), b[0].numpy(), axis=0)
    assert float(flat) == pytest.approx(float(want[0]), rel=1e-12)


@pytest.mark.slow
def test_judging_bundles_imports_no_torch(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``parity diff`` of a real comparison's sides, in a fresh interpreter: the verdict
    as the comparison judged it, and torch never imported (about two seconds of CPU a
    command, which every compare, diff, report and reindex used to pay)."""
    out = real_run(tmp_path_factory, "gpt-train")
    code = (
        "import sys\n"
        "from parity.cli import main\n"
        f"code = main(['diff', {str(out / 'baseline')!r}, {str(out / 'target')!r}, '--json'])\n"
        "print(code, 'torch' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=Path.cwd()
    )
    assert done.stderr.strip().splitlines()[-1] == "0 False", done.stderr[-2000:]
    judged = json.loads(done.stdout)
    stored = json.loads((out / "verdict.json").read_text())
    assert judged["numerics"]["gates"] and judged["numerics"] == stored["numerics"]
    assert judged["quality"] == stored["quality"]


@pytest.mark.slow  # starts an interpreter
def test_the_judge_and_the_bundle_reader_import_no_torch() -> None:
    """Every judge module, the bundle reader and the comparison, imported in a fresh
    interpreter: torch stays out (the slow test above runs a real ``parity diff``)."""
    judge = sorted(p.stem for p in (Path(arrays.__file__).parent / "judge").glob("*.py"))
    names = ["parity.arrays", "parity.bundle", "parity.comparison", "parity.sinks"]
    names += [f"parity.judge.{m}" for m in judge if m != "__init__"]
    code = f"import importlib, sys\nfor m in {names!r}: importlib.import_module(m)\n"
    code += "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
