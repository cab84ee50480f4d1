"""``neuronxcc.nki.compile``: the class of ``nki.jit`` kernels, under the name frameworks import
(``GenericKernel``), so a framework that wraps kernels finds nrtsim's."""

from nrtsim_nki import Kernel as GenericKernel  # noqa: F401
