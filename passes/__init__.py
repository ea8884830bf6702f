"""Graph -> Graph passes: transformations (grad, vmap, ...), simplification,
fusion. Each pass owns its rule table keyed by primitive."""
