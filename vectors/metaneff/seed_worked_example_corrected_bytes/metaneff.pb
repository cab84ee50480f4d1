

input0 8
output0 0"hlo