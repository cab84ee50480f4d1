"""nrtsim's simulator compiler under neuronx-cc's names.

``neuronxcc`` is provided by ``finder`` (installed at start-up by ``nrtsim_neuronx_cc.pth``) only
when no other ``neuronxcc`` is importable, so a real neuronx-cc always wins and none of its files
is ever overwritten. ``compiler.run`` runs the ``nrtsim`` tool as ``neuronx-cc``; ``launcher`` is
the ``neuronx-cc`` command.
"""
