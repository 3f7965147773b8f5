#!/usr/bin/python3
"""Does a test fail for its random draw alone? The body of upstream's
`TestReductions.test_ref_extremal_values` (test/test_reductions.py, PyTorch 1.13.1) run over many
seeds and over shifted inputs, on the CPU and on the reference backend (docs/select.md, "Staged
selection").

In the seed-2 fault-injection draw, `sub:float32` failed `test_ref_extremal_values_sum` and
`..._masked_sum` for complex64 through their inputs alone (make_tensor draws complex64 with
float32 `rsub`), and `--staged` left them in its second stage. This measures whether any evidence
could have told: how often those tests fail with no fault at all, only another seed, how often
with seed 1234 (upstream's) and the inputs shifted, and how many of the shifts of
`ootci discover --probe-inputs` (src/discover/discover.h) fail them.

Run on purpose (seconds), never from scripts/test:
  PYTHONPATH=examples/reference-backend /usr/bin/python3 bench/seed_fragility.py \
      [--ops sum,masked.sum] [--dtype complex64] [--seeds 200] [--devices cpu,privateuseone]
python/shims stands in for expecttest, as in every ootci run.
"""
import argparse
import math
import pathlib
import random
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "shims"))

import torch  # noqa: E402
from torch.testing import make_tensor  # noqa: E402
from torch.testing._internal.common_methods_invocations import reduction_ops  # noqa: E402
from torch.testing._internal.common_utils import SEED, TestCase  # noqa: E402

EXTREMALS = [0, 1, math.nan, math.inf, -math.inf]
SOURCE_DIR = pathlib.Path(__file__).resolve().parents[1]


def probe_shifts():
    """kInputProbeShifts, the shifts of `ootci discover --probe-inputs`, from its header."""
    header = (SOURCE_DIR / "src" / "select" / "discover.h").read_text()
    body = re.search(r"kInputProbeShifts\[\] = \{([^}]*)\}", header).group(1)
    return [float(v) for v in body.replace("\n", " ").split(",")]


def extremal_values_body(op, dtype, device, seed, shift, case):
    """test_ref_extremal_values with torch seeded as TestCase.setUp does and the input drawn by
    make_tensor moved by `shift` (both parts of a complex value). False if it fails."""
    torch.manual_seed(seed)
    t = make_tensor((5,), dtype=dtype, device=device, exclude_zero=True)
    with torch.no_grad():
        t.add_(shift)
    try:
        for extremal in EXTREMALS:
            t[2] = extremal
            for args, kwargs in op.generate_args_kwargs(t):
                result = op(t, *args, **kwargs)
                expected = op.ref(t.detach().cpu().numpy(), *args, **kwargs)
                case.assertEqual(result, expected, exact_dtype=False)
    except AssertionError:
        return False
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", default="sum,masked.sum")
    parser.add_argument("--dtype", default="complex64")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--devices", default="cpu,privateuseone")
    args = parser.parse_args()
    devices = args.devices.split(",")
    if any(d != "cpu" for d in devices):
        import ootci_reference_backend  # noqa: F401
    ops = {op.name: op for op in reduction_ops}
    dtype = getattr(torch, args.dtype)
    case = TestCase()
    complex_shift = dtype.is_complex
    for name in args.ops.split(","):
        op = ops[name]
        for device in devices:
            draws = random.Random(7)
            seeds = [draws.randrange(1 << 30) for _ in range(args.seeds)]
            shifts = [complex(draws.uniform(-2, 2), draws.uniform(-2, 2)) if complex_shift
                      else draws.uniform(-2, 2) for _ in range(args.seeds)]
            upstream = extremal_values_body(op, dtype, device, SEED, 0, case)
            by_seed = sum(not extremal_values_body(op, dtype, device, s, 0, case) for s in seeds)
            by_shift = sum(not extremal_values_body(op, dtype, device, SEED, s, case)
                           for s in shifts)
            # As the probe moves inputs: both parts of a complex value by the same shift.
            probes = probe_shifts()
            by_probe = [not extremal_values_body(op, dtype, device, SEED,
                                                 complex(p, p) if complex_shift else p, case)
                        for p in probes]
            first = next((p for p, failed in zip(probes, by_probe) if failed), None)
            print(f"{name:<12} {args.dtype:<10} {device:<14} seed {SEED}: "
                  f"{'passes' if upstream else 'fails'}; fails for {by_seed}/{len(seeds)} other "
                  f"seeds ({100 * by_seed / len(seeds):.0f}%), {by_shift}/{len(shifts)} shifts "
                  f"of its input in [-2, 2] ({100 * by_shift / len(shifts):.0f}%) and "
                  f"{sum(by_probe)}/{len(probes)} of the input probe's shifts (first: {first})",
                  flush=True)


if __name__ == "__main__":
    main()
