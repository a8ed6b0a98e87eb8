"""``gpu-tracker mcp``: the store served over the Model Context Protocol (stdio), read-only, so an
assistant can answer "where is an H100 cheapest, how has it moved, what does a TFLOP cost, when
does buying pay off" from live data. See ``tracker.mcp.server``."""
