"""The collection path, in the order data flows: collect (fetch, parse) -> normalise -> validate -> store.

``replay`` answers the same fetch code from bundled recordings.
"""
