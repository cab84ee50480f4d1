

input08

input12s8

input22w8
output0