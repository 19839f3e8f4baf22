"""The fusion section: on stacks with a ``Fusion`` layer (``fusion-ndarray``, ``autodiff-fusion-cuda``,
...), fused results equal unfused ones, values read in the middle of a chain stay right, in-place reuse
never clobbers a live tensor, the relative-signature cache serves new data, and streams on two threads
stay apart. Elsewhere the section skips."""
