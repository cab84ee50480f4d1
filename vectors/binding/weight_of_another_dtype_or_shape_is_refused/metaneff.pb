

input08

input12layer.weight8
output0