"""Use-cases: read the cluster through the client layer, compute with the domain, return Results."""
