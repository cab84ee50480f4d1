"""The wheels in a fresh virtual environment, as a user gets them.

Usage: python3 python/tests/smoke.py [WHEEL_DIR]   (default: target/wheels)

Made by `cargo xtask wheel`; `.ci/run` runs this after it. Standard library only, no network:
pip installs from WHEEL_DIR alone (`--no-index --find-links`). Each check prints `ok: …`; the
last line counts them, and the exit status is non-zero when one failed.

The checks: the commands (`nrtsim`, `neuronx-cc`, `python -m nrtsim`), the SDK folder inside the
package (a C program built against it with pkg-config runs on the simulator; the library's
symbols keep their NRT_2.0.0 versions), a compile of a small HLO module with `neuronx-cc`
into a NEFF that `nrtsim inspect` reads, nkipy's in-process call of
`neuronxcc.driver.CommandDriver.main`, how a failure reaches the caller, the one notice per
process, and that a real neuronx-cc (a dummy distribution built here) wins in both install
orders without a file of its package overwritten; nrtsim-nki with its dependencies from
`WHEEL_DIR/deps`: a kernel runs under both names with one notice, and a real `nki` wins;
nrtsim-torch (without torch, which is too large to install twice: `torch_installed.py` runs
its tests against the installed wheel beside target/pyenv's torch): the wheel holds the package and its C++ source, the nrtsim wheel's SDK folder the header
and library symbols that source builds against, and `nrtsim.torch` says what is missing.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTICE = "this is nrtsim's simulator compiler"

# A module of two parameters and one result, as XLA prints HLO text.
ADD_HLO = """HloModule add, entry_computation_layout={(f32[2]{0}, f32[2]{0})->f32[2]{0}}

ENTRY main {
  x = f32[2]{0} parameter(0)
  y = f32[2]{0} parameter(1)
  ROOT sum = f32[2]{0} add(x, y)
}
"""

# A C program that asks the library a question it answers before nrt_init.
CORES_C = r"""
#include <stdio.h>
#include <nrt/nrt.h>
int main(void) {
    uint32_t count = 0;
    NRT_STATUS status = nrt_get_total_nc_count(&count);
    printf("status %d cores %u\n", (int)status, count);
    return status == NRT_SUCCESS ? 0 : 1;
}
"""

passed = 0
failed = 0


def check(what: str, condition: bool, detail: str = "") -> None:
    global passed, failed
    if condition:
        passed += 1
        print(f"ok: {what}")
    else:
        failed += 1
        print(f"FAILED: {what}\n{detail}")


def run(args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def shown(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


class Venv:
    """A fresh virtual environment under `parent`."""

    def __init__(self, parent: Path, name: str):
        self.dir = parent / name
        subprocess.run([sys.executable, "-m", "venv", str(self.dir)], check=True)
        self.bin = self.dir / "bin"
        self.python = self.bin / "python"
        # The environment's commands first on PATH, as after `activate`.
        self.env = dict(os.environ, PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        self.env.pop("PYTHONPATH", None)

    def pip_install(self, wheel_dir: Path, *requirements: str) -> subprocess.CompletedProcess:
        return run(
            [self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--no-index", "--find-links", wheel_dir, *requirements],
            env=self.env,
        )

    def python_code(self, code: str, cwd=None) -> subprocess.CompletedProcess:
        return run([self.python, "-c", code], cwd=cwd, env=self.env)


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def dummy_real_compiler(out: Path) -> Path:
    """A tiny wheel of a distribution named neuronx-cc that owns `neuronxcc/` and the
    `neuronx-cc` command, as the real one does."""
    dist_info = "neuronx_cc-99.0.dist-info"
    files = {
        "neuronxcc/__init__.py": b"REAL = True\n",
        "neuronxcc/driver/__init__.py": b"",
        "neuronxcc/driver/CommandDriver.py": (
            b"def main():\n    print('the real neuronx-cc')\n    return 0\n"
        ),
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: neuronx-cc\nVersion: 99.0\n",
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: smoke.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        f"{dist_info}/entry_points.txt": (
            b"[console_scripts]\nneuronx-cc = neuronxcc.driver.CommandDriver:main\n"
        ),
    }
    wheel = out / "neuronx_cc-99.0-py3-none-any.whl"
    records = [record_line(name, data) for name, data in files.items()]
    records.append(f"{dist_info}/RECORD,,")
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel


def check_sdk(venv: Venv, work: Path) -> None:
    result = run([venv.python, "-m", "nrtsim", "sdk-root"], env=venv.env)
    check("python -m nrtsim sdk-root", result.returncode == 0, shown(result))
    sdk = Path(result.stdout.strip())
    for name in ["lib/libnrt.so.1", "lib/libnrt.so", "lib/pkgconfig/nrt.pc", "include/nrt/nrt.h"]:
        check(f"the SDK folder has {name}", (sdk / name).is_file(), str(sdk))
    help_result = run([venv.python, "-m", "nrtsim", "--help"], env=venv.env)
    check("python -m nrtsim --help", help_result.returncode == 0 and "sdk-root" in help_result.stdout,
          shown(help_result))
    if shutil.which("readelf"):
        symbols = run(["readelf", "--dyn-syms", "-W", sdk / "lib/libnrt.so.1"])
        check("the wheel's library exports nrt_init@@NRT_2.0.0",
              "nrt_init@@NRT_2.0.0" in symbols.stdout, shown(symbols))
        dynamic = run(["readelf", "-d", "-W", sdk / "lib/libnrt.so.1"])
        check("the wheel's library has SONAME libnrt.so.1",
              "Library soname: [libnrt.so.1]" in dynamic.stdout, shown(dynamic))
    else:
        print("note: no readelf, the symbol versions are not checked")
    source = work / "cores.c"
    source.write_text(CORES_C)
    cc = os.environ.get("CC", "cc")
    if shutil.which("pkg-config"):
        flags = run(["pkg-config", "--cflags", "--libs", "nrt"],
                    env=dict(venv.env, PKG_CONFIG_PATH=str(sdk / "lib/pkgconfig")))
        check("pkg-config --cflags --libs nrt", flags.returncode == 0, shown(flags))
        flags = flags.stdout.split()
    else:
        print("note: no pkg-config, building with the flags nrt.pc gives")
        lib = sdk / "lib"
        flags = [f"-I{sdk / 'include'}", f"-L{lib}", f"-Wl,-rpath,{lib}", "-lnrt"]
    program = work / "cores"
    built = run([cc, source, "-o", program, *flags])
    check("a C program builds against the SDK folder", built.returncode == 0, shown(built))
    ran = run([program], env=dict(venv.env, NRTSIM_CORES="3"))
    check("it runs on the wheel's library", ran.stdout == "status 0 cores 3\n", shown(ran))


def check_compiler(venv: Venv, work: Path) -> None:
    # The NEFF records its command line (its uuid derives from it), so every compile below
    # writes `file.neff` with the same arguments, each in its own folder, as nkipy does.
    hlo = work / "add.hlo"
    hlo.write_text(ADD_HLO)
    args = ["compile", "--framework", "XLA", str(hlo), "--target", "trn2", "--output=file.neff",
            "--lnc", "1"]
    folders = [work / name for name in ["command", "process1", "process2"]]
    for folder in folders:
        folder.mkdir()
    version = run(["neuronx-cc", "--version"], env=venv.env)
    check("neuronx-cc --version", version.returncode == 0, shown(version))
    check("neuronx-cc says once that it is the simulator's compiler",
          version.stderr.count(NOTICE) == 1, shown(version))
    compiled = run(["neuronx-cc", *args], cwd=folders[0], env=venv.env)
    check("neuronx-cc compile writes a NEFF",
          compiled.returncode == 0 and (folders[0] / "file.neff").is_file(), shown(compiled))
    inspected = run(["nrtsim", "inspect", "file.neff"], cwd=folders[0], env=venv.env)
    check("nrtsim inspect reads it", inspected.returncode == 0, shown(inspected))

    # nkipy's in-process call: chdir, argv set, main() called with no arguments; twice in one
    # process, then once on a file that does not exist.
    code = (
        "import os, sys\n"
        f"args = {args!r}\n"
        "from neuronxcc.driver.CommandDriver import main\n"
        "codes = []\n"
        f"for folder in {[str(f) for f in folders[1:]]!r}:\n"
        "    os.chdir(folder)\n"
        "    sys.argv = ['neuronx-cc', *args]\n"
        "    codes.append(main())\n"
        "sys.argv = ['neuronx-cc', 'compile', '--framework', 'XLA', 'missing.hlo', '--target',\n"
        "            'trn2', '--output=missing.neff']\n"
        "codes.append(main())\n"
        "print(codes)\n"
    )
    in_process = venv.python_code(code, cwd=work)
    codes = in_process.stdout.strip()
    check("main() in process writes the NEFF and returns 0",
          codes.startswith("[0, 0, ") and (folders[1] / "file.neff").is_file(), shown(in_process))
    check("a failed compile is a non-zero return value, no NEFF",
          codes.startswith("[") and not codes.endswith(", 0]")
          and not any(work.rglob("missing.neff")), shown(in_process))
    check("the notice comes once per process", in_process.stderr.count(NOTICE) == 1,
          shown(in_process))
    neffs = [folder / "file.neff" for folder in folders]
    check("same input, same NEFF bytes (command and in process)",
          all(neff.is_file() for neff in neffs)
          and len({neff.read_bytes() for neff in neffs}) == 1)
    shim = venv.python_code("import neuronxcc; print(neuronxcc.NRTSIM_SHIM)")
    check("import neuronxcc is the shim when no real one is installed",
          shim.stdout.strip() == "True", shown(shim))


def check_real_compiler_wins(wheel_dir: Path, scratch: Path) -> None:
    real_dir = scratch / "real-wheel"
    real_dir.mkdir()
    dummy_real_compiler(real_dir)
    links = [wheel_dir, real_dir]

    def install(venv: Venv, requirement: str) -> None:
        args = [venv.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                "--no-index"]
        for link in links:
            args += ["--find-links", link]
        result = run([*args, requirement], env=venv.env)
        check(f"pip install {requirement} into {venv.dir.name}", result.returncode == 0,
              shown(result))

    shim_wheels = sorted(wheel_dir.glob("nrtsim_neuronx_cc-*.whl"))
    owned = []
    for wheel in shim_wheels:
        with zipfile.ZipFile(wheel) as archive:
            owned += [n for n in archive.namelist() if n.split("/")[0] == "neuronxcc"]
    check("the shim's wheel has no file under neuronxcc/ (a real neuronx-cc's folder)",
          len(shim_wheels) == 1 and not owned, f"{shim_wheels} {owned}")

    # The real compiler first, the shim after: the shim takes the command, nothing else.
    first = Venv(scratch, "real-then-shim")
    install(first, "neuronx-cc")
    install(first, "nrtsim-neuronx-cc")
    imported = first.python_code("import neuronxcc; print(getattr(neuronxcc, 'REAL', False))")
    check("real then shim: import neuronxcc is the real one", imported.stdout.strip() == "True",
          shown(imported))
    refused = run(["neuronx-cc", "--version"], env=first.env)
    check("real then shim: the shim's neuronx-cc refuses to run (exit 2)",
          refused.returncode == 2 and "refusing" in refused.stderr, shown(refused))

    # The shim first, the real compiler after: the real one takes its command back.
    second = Venv(scratch, "shim-then-real")
    install(second, "nrtsim-neuronx-cc")
    install(second, "neuronx-cc")
    imported = second.python_code("import neuronxcc; print(getattr(neuronxcc, 'REAL', False))")
    check("shim then real: import neuronxcc is the real one", imported.stdout.strip() == "True",
          shown(imported))
    real = run(["neuronx-cc", "--version"], env=second.env)
    check("shim then real: neuronx-cc is the real one",
          real.returncode == 0 and real.stdout.strip() == "the real neuronx-cc", shown(real))


NKI_NOTICE = "this is nrtsim's NKI simulator"

# A kernel as the NKI docs write them, run through both names of the module.
NKI_KERNEL = r"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import nki as top
assert top is nki, (top, nki)

@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out

a = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
out = add(a, a)
assert np.array_equal(out, a + a), out
out = add(a, a)
print("kernel ok")
"""


def check_nki(wheel_dir: Path, scratch: Path) -> None:
    """nrtsim-nki from the wheels (its numpy and ml_dtypes from the downloaded `deps`): a kernel
    runs on the installed tool, under both names, with one notice; a real `nki` on the path wins."""
    venv = Venv(scratch, "nki")
    installed = run(
        [venv.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-index", "--find-links", wheel_dir, "--find-links", wheel_dir / "deps", "nrtsim-nki"],
        env=venv.env,
    )
    check("pip install nrtsim-nki (with nrtsim, the shim, numpy and ml_dtypes) from files alone",
          installed.returncode == 0, shown(installed))
    if installed.returncode != 0:
        return
    # From the repository's root, whose nki/ folder (the Rust crate) is a namespace package on
    # the path: nrtsim's nki is imported all the same.
    ran = venv.python_code(NKI_KERNEL, cwd=ROOT)
    check("a kernel runs through neuronxcc.nki and nki on the installed tool",
          ran.returncode == 0 and "kernel ok" in ran.stdout, shown(ran))
    check("nrtsim-nki says once that it is the simulator",
          ran.stderr.count(NKI_NOTICE) == 1, shown(ran))
    real = scratch / "real-nki"
    (real / "nki").mkdir(parents=True)
    (real / "nki" / "__init__.py").write_text("WHO = 'the real nki'\n")
    env = dict(venv.env, PYTHONPATH=str(real))
    won = run([venv.python, "-c", "import nki; print(nki.WHO)"], env=env)
    check("an nki on the path is imported before nrtsim's",
          won.returncode == 0 and won.stdout.strip() == "the real nki", shown(won))


def check_torch(wheel_dir: Path, scratch: Path) -> None:
    """nrtsim-torch from the wheels, without torch: what the C++ layer builds against is in the
    nrtsim wheel, and the imports say what is missing."""
    wheels = sorted(wheel_dir.glob("nrtsim_torch-*.whl"))
    check("the nrtsim-torch wheel was built", len(wheels) == 1, str(wheels))
    if len(wheels) != 1:
        return
    names = zipfile.ZipFile(wheels[0]).namelist()
    check("the nrtsim-torch wheel holds the package and the C++ layer's source",
          {"nrtsim_torch/__init__.py", "nrtsim_torch/_trace.py",
           "nrtsim_torch/csrc/neuron.cpp"} <= set(names), str(names))
    venv = Venv(scratch, "torch")
    installed = venv.pip_install(wheel_dir, "nrtsim")
    check("pip install nrtsim from the wheels alone (for nrtsim-torch)", installed.returncode == 0,
          shown(installed))
    if installed.returncode != 0:
        return
    missing = venv.python_code("import nrtsim.torch")
    check("nrtsim.torch without nrtsim-torch names the distribution to install",
          missing.returncode != 0 and "pip install nrtsim-torch" in missing.stderr, shown(missing))
    sdk = venv.python_code(
        "import nrtsim, subprocess\n"
        "root = nrtsim.sdk_root()\n"
        "assert (root / 'include/nrtsim/bind.h').is_file(), 'no include/nrtsim/bind.h'\n"
        "symbols = subprocess.run(['nm', '-D', '--defined-only', str(root / 'lib/libnrt.so.1')],\n"
        "                         capture_output=True, text=True, check=True).stdout\n"
        "print(sum(' nrtsim_bind_' in line for line in symbols.splitlines()))\n"
    )
    check("the SDK folder has nrtsim/bind.h and libnrt.so.1 exports its functions",
          sdk.returncode == 0 and int(sdk.stdout.strip() or 0) >= 20, shown(sdk))
    without_torch = run(
        [venv.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-index", "--no-deps", wheels[0]],
        env=venv.env,
    )
    check("pip install nrtsim-torch --no-deps", without_torch.returncode == 0, shown(without_torch))
    no_torch = venv.python_code("import nrtsim.torch")
    check("nrtsim.torch without torch fails importing torch",
          no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr,
          shown(no_torch))


def main() -> int:
    wheel_dir = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "target/wheels"
    wheels = sorted(p.name for p in wheel_dir.glob("*.whl"))
    print(f"smoke: wheels in {wheel_dir}: {wheels}")
    with tempfile.TemporaryDirectory(prefix="nrtsim-smoke-") as scratch:
        scratch = Path(scratch)
        work = scratch / "work"
        work.mkdir()
        venv = Venv(scratch, "fresh")
        installed = venv.pip_install(wheel_dir, "nrtsim-neuronx-cc")
        check("pip install nrtsim-neuronx-cc (and nrtsim) from the wheels alone",
              installed.returncode == 0, shown(installed))
        if installed.returncode == 0:
            version = run(["nrtsim", "--version"], env=venv.env)
            check("nrtsim --version", version.returncode == 0
                  and version.stdout.startswith("nrtsim "), shown(version))
            check_sdk(venv, work)
            check_compiler(venv, work)
        check_real_compiler_wins(wheel_dir, scratch)
        check_nki(wheel_dir, scratch)
        check_torch(wheel_dir, scratch)
    print(f"smoke: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
