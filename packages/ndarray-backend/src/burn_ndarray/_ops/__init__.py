"""NdArray's op groups, one module each, mirroring ``burn_backend``'s interface."""
