"""The op groups of the backend interface, one module each, as in Burn."""
