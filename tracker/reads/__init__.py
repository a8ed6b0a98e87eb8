"""The read path every interface shares: what the JSON API, the dashboard, the MCP server and the
exports answer, as plain dicts (``data``) and the models that document them (``schemas``).

Why a package of its own, between the domain and the interfaces: the interfaces are siblings
that must not import each other (the MCP server would otherwise load the dashboard to answer a
question), and one read path keeps their answers the same for the same filters. Nothing here
knows about HTTP, HTML or MCP.
"""
