"""The wire formats: translation between the protocols, their JSON and SSE shapes, the field table and
the same-protocol passthrough. Pure, like the rest of core; import the modules themselves."""
