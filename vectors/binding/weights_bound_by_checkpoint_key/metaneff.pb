

input08

input12b.scale8

input22a.bias8
output0