"""The op groups of the Cuda backend."""
