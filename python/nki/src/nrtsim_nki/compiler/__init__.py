"""``nki.compiler``: allocation directives. Placement does not change results, so nrtsim keeps the
memory region they name and that the kernel placed the tensor itself, and of a modulo allocation
(``mod_alloc(num_free_tiles=...)``, ``num_bank_tiles=...``) the number of physical blocks: the
SBUF and PSUM capacity check counts such a tensor alone, not with the tensors nrtsim places."""

from __future__ import annotations

from .. import _core


class _Allocated(_core.Buffer):
    """A memory region the kernel placed a tensor in itself (``mod_alloc``, ``alloc``): the
    capacity check counts it alone, and of a modulo allocation only its ``tiles`` physical
    blocks (a tensor's blocks are the axes before its partition axis)."""

    __slots__ = ("tiles", "placed")

    def __init__(self, name: str, tiles):
        super().__init__(name)
        self.tiles = tiles
        self.placed = True


class _Region:
    def __init__(self, buffer):
        self._buffer = buffer

    def mod_alloc(self, *args, num_free_tiles=(), num_bank_tiles=(), **kwargs):
        tiles = tuple(num_free_tiles) or tuple(num_bank_tiles)
        count = None
        if tiles:
            count = 1
            for n in tiles:
                count *= int(n)
        return _Allocated(self._buffer.name, count)

    def alloc(self, *args, **kwargs):
        return _Allocated(self._buffer.name, None)

    def auto_alloc(self, *args, **kwargs):
        return self._buffer


sbuf = _Region(_core.SBUF)
psum = _Region(_core.PSUM)


def _passthrough(function=None, *args, **kwargs):
    if callable(function):
        return function
    return lambda f: f


skip_middle_end_transformations = _passthrough
enable_stack_allocator = _passthrough
force_auto_alloc = _passthrough
