"""Test support shipped to users as `gp.test`: the op checker and numeric gradient checks,
and the simulated GPU (NumPy under CuPy's rules). May import every other room."""
