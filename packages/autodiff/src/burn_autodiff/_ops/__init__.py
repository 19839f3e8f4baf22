"""The differentiable op groups of Autodiff, one module each."""
