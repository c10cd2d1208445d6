"""The site: Datasette's options, server, deployment, security headers, error pages,
query arguments and citation text, and the helpers the plugins in `plugins/` share."""
