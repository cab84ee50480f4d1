"""Imports nrtsim's NKI from this source tree (as the installed .pth files would)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for path in (os.path.join(ROOT, "nki", "src"), os.path.join(ROOT, "neuronx-cc", "src")):
    if path not in sys.path:
        sys.path.insert(0, path)
os.environ.setdefault("NRTSIM_QUIET", "1")

import nrtsim_neuronx_cc.finder  # noqa: E402
import nrtsim_nki.finder  # noqa: E402

nrtsim_neuronx_cc.finder.install()
nrtsim_nki.finder.install()
