"""The shim's ``neuronxcc.driver``: only ``CommandDriver``."""
