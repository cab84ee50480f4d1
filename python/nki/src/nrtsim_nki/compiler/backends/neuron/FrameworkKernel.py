"""``neuronxcc.nki.compiler.backends.neuron.FrameworkKernel``: kernels embedded in a framework's
graph. ``UnifiedKernel.trace(kernel, grid=...)`` then ``dump_config(*operands)`` give what a
framework needs to emit the ``AwsNeuronCustomNativeKernel`` custom call: the traced program as
its ``backend_config``, the results' types, constants and aliases (``nrtsim_nki.framework``)."""

from nrtsim_nki.framework import UnifiedKernel  # noqa: F401
