#!/usr/bin/env python3
"""XLA's side of `text_xla.rs`'s `xla_names_instructions_as_we_do`: XLA parses an HLO text and
writes its parse as a serialized HloModuleProto; and XLA's proto reader loads our encoding of the
same text, which it refuses when two instructions share a name.

Usage: parse_text.py TEXT.hlo XLA_PARSE.pb OURS.pb
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jaxlib._hlo as hlo  # noqa: E402
from jax._src.lib import _jax  # noqa: E402


def main(text_path, out_path, ours_path):
    with open(text_path) as f:
        module = hlo.hlo_module_from_text(f.read())
    with open(out_path, "wb") as f:
        f.write(module.as_serialized_hlo_module_proto())
    with open(ours_path, "rb") as f:
        _jax.mlir.hlo_to_stablehlo(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
