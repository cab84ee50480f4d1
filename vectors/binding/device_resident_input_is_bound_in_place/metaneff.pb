

input08
output0