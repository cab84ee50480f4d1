"""``nki.typing``: annotations of kernel tensors (``tensor[128, 512]``); nothing is checked."""

from __future__ import annotations


class _Subscriptable(type):
    def __getitem__(cls, item):
        return cls


class tensor(metaclass=_Subscriptable):  # noqa: N801
    """``tensor[shape]``: an annotation only."""


class scalar(metaclass=_Subscriptable):  # noqa: N801
    """A scalar annotation."""


mutable_tensor = tensor
