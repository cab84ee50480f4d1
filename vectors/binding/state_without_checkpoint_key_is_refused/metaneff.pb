

input08

input18
output0