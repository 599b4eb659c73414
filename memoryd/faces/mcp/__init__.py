"""``memoryd mcp``: the MCP server (:mod:`.server`) and its stdio transport (:mod:`.stdio`)."""
