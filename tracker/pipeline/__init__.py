"""The collection path, in the order data flows: collect (fetch, parse) -> normalise -> validate -> store.

``replay`` answers the same fetch code from bundled recordings. ``imports`` is the other way in:
history on day one from public price archives and our own exports (one module per format, a
registry), stored under the same rules as a collection.
"""
