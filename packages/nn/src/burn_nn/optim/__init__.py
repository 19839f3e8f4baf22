"""Optimizers, gradient containers and learning-rate schedulers.

The book's training step reads the same here::

    grads = GradientsParams.from_grads(loss.backward(), model)
    model = optim.step(lr, model, grads)
"""

# == exports: optimizers ==
# == end: optimizers ==
# == exports: lr schedulers ==
# == end: lr schedulers ==

__all__ = [
    # == exports: optimizers ==
    # == end: optimizers ==
    # == exports: lr schedulers ==
    # == end: lr schedulers ==
]
