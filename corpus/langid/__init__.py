"""Language ID with fastText's lid.176: the model, and its predict compiled by numba."""
