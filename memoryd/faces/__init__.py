"""The faces: how people and agents reach memoryd (the CLI, the MCP server, the control
socket, the dashboard, doctor, diagnose, service units, the drill). Each calls the
operations layer; none builds another."""
