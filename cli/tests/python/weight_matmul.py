"""The large-weight matmul through `nrt_execute`: x f16[M,K] @ y f16[K,N], by default the NKI
matmul shape M=128, K=32768, N=65536 (y is 4 GiB).

Writes the module as HLO text, compiles it with the simulator's compile target
(`nrtsim compile --framework XLA ... --target trn1`), runs the NEFF with `nrtsim run` (one
launch through the simulator's `nrt_execute`), reports the peak resident memory, and checks
the result against numpy on sampled columns.

    python weight_matmul.py NRTSIM WORKDIR [--m 128] [--k 32768] [--n 65536] [--columns 64]

The full size needs about 13 GB of disk in WORKDIR and, by the bound the simulator keeps, a
peak RSS of about twice the inputs (device memory holds them, the interpreter one more copy)
plus the output three times and a small constant: about 8.1 GiB. CI runs a scaled version
(`cli/tests/memory_cli.rs`).

The check: our dot widens f16 to f32, accumulates in f32 and rounds once to f16, as XLA on CPU
does; numpy's reference is `x.astype(f32) @ y[:, cols].astype(f32)` rounded to f16. The two
f32 sums add the same products in different orders, so they differ by the rounding error of
f32 summation, which for K random-sign terms grows like sqrt(K) * 2^-24 * sum|x_k y_k|
(Higham's probabilistic estimate; the worst case grows with K). Rounding each to f16 then
adds at most one f16 ulp. So an element passes when
    |ours - ref| <= ulp_f16(ref) + 2 * sqrt(K) * 2^-24 * (|x| @ |y|)[:, col]
which is one f16 ulp for results far from zero and lets sums that cancel to near zero (where
the f16 ulp is tiny) differ by their f32 noise. The script also prints how many elements are
bit-equal and the largest difference in f16 ulps among results of magnitude above 1.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

HLO = """HloModule weight_matmul

ENTRY main {{
  x = f16[{m},{k}] parameter(0)
  y = f16[{k},{n}] parameter(1)
  ROOT out = f16[{m},{n}] dot(x, y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def write_inputs(workdir, m, k, n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(m, k)).astype(np.float16)
    np.save(os.path.join(workdir, "x.npy"), x)
    y = np.lib.format.open_memmap(
        os.path.join(workdir, "y.npy"), mode="w+", dtype=np.float16, shape=(k, n)
    )
    rows = max(1, (64 << 20) // (2 * n))
    for start in range(0, k, rows):
        stop = min(k, start + rows)
        y[start:stop] = rng.uniform(-1, 1, size=(stop - start, n)).astype(np.float16)
    y.flush()
    del y
    return x


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("nrtsim")
    parser.add_argument("workdir")
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--k", type=int, default=32768)
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--columns", type=int, default=64)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    m, k, n = args.m, args.k, args.n
    os.makedirs(args.workdir, exist_ok=True)
    module = os.path.join(args.workdir, "weight_matmul.hlo")
    with open(module, "w") as f:
        f.write(HLO.format(m=m, k=k, n=n))
    neff = os.path.join(args.workdir, "weight_matmul.neff")
    subprocess.run(
        [args.nrtsim, "compile", "--framework", "XLA", module, "--target", "trn1",
         "--output", neff],
        check=True,
    )
    x = write_inputs(args.workdir, m, k, n, args.seed)
    out_dir = os.path.join(args.workdir, "out")
    input_bytes = 2 * (m * k + k * n)
    started = time.time()
    run = subprocess.run(
        [args.nrtsim, "run", neff,
         "--input", "input0=" + os.path.join(args.workdir, "x.npy"),
         "--input", "input1=" + os.path.join(args.workdir, "y.npy"),
         "--output-dir", out_dir,
         "--max-input-bytes", str(input_bytes + (1 << 20)),
         "--report-peak-rss"],
        capture_output=True, text=True,
    )
    seconds = time.time() - started
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        sys.exit(f"nrtsim run failed ({run.returncode})")
    peak = int(re.search(r"peak RSS: (\d+) bytes", run.stderr).group(1))
    outputs = [name for name in os.listdir(out_dir) if name.endswith(".npy")]
    got = np.load(os.path.join(out_dir, outputs[0]))
    assert got.shape == (m, n) and got.dtype == np.float16, (got.shape, got.dtype)
    y = np.load(os.path.join(args.workdir, "y.npy"), mmap_mode="r")
    cols = np.sort(np.random.default_rng(args.seed + 1).choice(n, args.columns, replace=False))
    want = (x.astype(np.float32) @ np.asarray(y[:, cols]).astype(np.float32)).astype(np.float16)
    mine = got[:, cols]
    diff = np.abs(mine.astype(np.float64) - want.astype(np.float64))
    spacing = np.spacing(np.abs(want)).astype(np.float64)
    magnitude = np.abs(x).astype(np.float32) @ np.abs(np.asarray(y[:, cols])).astype(np.float32)
    tolerance = spacing + 2 * np.sqrt(k) * 2.0**-24 * magnitude.astype(np.float64)
    large = np.abs(want) > 1
    large_ulps = (diff / spacing)[large].max() if large.any() else 0.0
    output_bytes = 2 * m * n
    print(f"x f16[{m},{k}] @ y f16[{k},{n}]: {seconds:.1f} s, "
          f"{2 * m * k * n / seconds / 1e9:.1f} GFLOP/s")
    print(f"peak RSS {peak / 2**30:.2f} GiB; inputs {input_bytes / 2**30:.2f} GiB, "
          f"output {output_bytes / 2**30:.3f} GiB; "
          f"bound 2 x inputs + 3 x output = {(2 * input_bytes + 3 * output_bytes) / 2**30:.2f} GiB")
    print(f"{args.columns} sampled columns: {np.mean(diff == 0) * 100:.2f} % bit-equal to numpy, "
          f"at most {large_ulps:.0f} f16 ulp apart where |ref| > 1, "
          f"worst difference {np.max(diff / tolerance):.2f} of the tolerance")
    if np.any(diff > tolerance):
        sys.exit("a result is outside the tolerance")


if __name__ == "__main__":
    main()
