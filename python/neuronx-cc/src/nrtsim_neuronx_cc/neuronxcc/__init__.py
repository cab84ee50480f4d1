"""nrtsim's stand-in for the ``neuronxcc`` package: only ``neuronxcc.driver.CommandDriver.main``.

It is nrtsim's simulator compiler, not AWS's neuronx-cc: the NEFFs it writes run on nrtsim's
simulated libnrt, and a real libnrt refuses them.
"""

#: Marks this package as the shim (a real neuronxcc has no such attribute).
NRTSIM_SHIM = True
