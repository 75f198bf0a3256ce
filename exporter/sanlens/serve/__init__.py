"""Serving: the HTTP server, its routes, the cached exposition, the connection table, web security and the health check."""
