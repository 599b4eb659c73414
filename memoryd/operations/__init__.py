"""What a request does, over the home, its configuration, the authority and the archive:
one layer every face (CLI, MCP server, control socket, dashboard) calls."""
